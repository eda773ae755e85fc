#include "linalgd/npy.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <complex>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/src/npy_header.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace linalgd::client {
namespace {

using ::testing::HasSubstr;

// A .npy file as numpy writes it: magic, version, header length, the dict
// padded with spaces to a multiple of 64 bytes and ended by '\n', then data.
std::string MakeNpy(absl::string_view dict, absl::string_view data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header(dict);
  while ((prefix + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) out.push_back(static_cast<char>(header.size() >> (8 * i)));
  return out + header + std::string(data);
}

std::string F32Bytes(std::initializer_list<float> v) {
  return std::string(reinterpret_cast<const char*>(v.begin()), v.size() * sizeof(float));
}

std::string TempPath(absl::string_view name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/linalgd_npy_test_", ::getpid(), "_", name);
}

TEST(NpyTest, DecodesWhatNumpyWrites) {
  const std::string file = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                   F32Bytes({0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(file.size(), 128u + 24u);
  absl::StatusOr<Tensor> t = DecodeNpy(file, "a.npy");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kF32);
  EXPECT_EQ(t->shape(), std::vector<int64_t>({2, 3}));
  EXPECT_EQ(t->ToVector<float>(), std::vector<float>({0, 1, 2, 3, 4, 5}));
}

TEST(NpyTest, EncodeMatchesNumpyByteForByte) {
  Tensor t = *Tensor::FromVector<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  const std::string want = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                   F32Bytes({0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(*EncodeNpy(t), want);
  Tensor v = *Tensor::FromVector<double>({4}, {1, 2, 3, 4});
  EXPECT_THAT(*EncodeNpy(v), HasSubstr("'shape': (4,), }"));
}

TEST(NpyTest, RoundTripsEveryDTypeAndVersion) {
  std::string half_bytes(12, '\0');
  for (int i = 0; i < 6; ++i) half_bytes[2 * i + 1] = static_cast<char>(0x3c + i);
  const Tensor tensors[] = {
      *Tensor::FromVector<float>({2, 3}, {1, -2, 3.5f, 4, 5, 6}),
      *Tensor::FromVector<double>({3, 1, 2}, {1, 2, 3, 4, 5, 1e-300}),
      *Tensor::FromBytes(DType::kF16, {6}, half_bytes),
      *Tensor::Zeros(DType::kF32, {}),
      *Tensor::Zeros(DType::kF64, {0, 4}),
      *Tensor::FromVector<std::complex<float>>({2}, {{1, -2}, {0.5f, 3}}),
      *Tensor::FromVector<std::complex<double>>({1, 2}, {{1, 2}, {-3, 1e-300}})};
  for (const Tensor& t : tensors) {
    for (int version : {0, 1, 2, 3}) {
      absl::StatusOr<std::string> bytes = EncodeNpy(t, version);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      EXPECT_EQ((*bytes)[6], version == 0 ? 1 : version);
      EXPECT_EQ((bytes->size() - t.bytes().size()) % 64, 0u);
      absl::StatusOr<Tensor> back = DecodeNpy(*bytes, "x.npy");
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(*back, t) << t.DebugString() << " v" << version;
    }
  }
}

TEST(NpyTest, FileRoundTrip) {
  const std::string path = TempPath("round_trip.npy");
  Tensor t = *Tensor::FromVector<double>({2, 2}, {1, 2, 3, 4});
  ASSERT_TRUE(WriteNpy(path, t).ok());
  absl::StatusOr<Tensor> back = ReadNpy(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
  std::remove(path.c_str());
}

// The file's bytes are EncodeNpy's, every dtype and version; a file that is
// not whole is refused naming its path, as DecodeNpy refuses such contents.
TEST(NpyTest, FilesHoldEncodeNpysBytesAndAreCheckedAsContentsAre) {
  const std::string path = TempPath("bytes.npy");
  Tensor t = *Tensor::FromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  for (int version : {0, 1, 2, 3}) {
    ASSERT_TRUE(WriteNpy(path, t, version).ok());
    std::ifstream in(path, std::ios::binary);
    const std::string written((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    EXPECT_EQ(written, *EncodeNpy(t, version)) << "version " << version;
  }
  const std::string good = *EncodeNpy(t);
  for (const std::string& bad : {good.substr(0, good.size() - 1), good + "x"}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
    absl::StatusOr<Tensor> read = ReadNpy(path);
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(read.status().message()), HasSubstr(path));
    EXPECT_THAT(std::string(read.status().message()),
                HasSubstr(bad.size() < good.size() ? "truncated data" : "trailing data"));
  }
  std::remove(path.c_str());
}

// A file is checked from its header before its data is read: a terabyte
// that is not a .npy (a sparse file: no disk, no memory) or whose header
// does not match its size is refused at once, naming the path; a header
// longer than the reader takes is refused too.
TEST(NpyTest, FilesAreCheckedFromTheirHeaderFirst) {
  const std::string path = TempPath("huge.npy");
  auto sized = [&](const std::string& start, off_t size) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << start;
    return ::truncate(path.c_str(), size) == 0;
  };
  constexpr off_t kTerabyte = off_t{1} << 40;
  if (!sized("", kTerabyte)) {
    GTEST_SKIP() << "no sparse terabyte file here: " << std::strerror(errno);
  }
  absl::StatusOr<Tensor> t = ReadNpy(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("not a .npy file"));
  EXPECT_THAT(std::string(t.status().message()), HasSubstr(path));

  // A header for 2^37 f64 (1 TiB) on a file of half that: truncated data.
  ASSERT_TRUE(
      sized(MakeNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (137438953472,), }", ""),
            kTerabyte / 2));
  t = ReadNpy(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("truncated data"));
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("needs 1099511627776 bytes"));

  // A header length over the limit (format 2.0: a 4-byte length).
  std::string big = "\x93NUMPY";
  big += std::string("\x02\x00", 2);
  big += std::string("\x00\x00\x00\x10", 4);  // 2^28 bytes
  ASSERT_TRUE(sized(big, kTerabyte));
  for (const absl::StatusOr<Tensor>& r : {ReadNpy(path), DecodeNpy(big, path)}) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("header length is 268435456 bytes"));
  }

  // A format 1.0 header length shorter than the 12 bytes read first.
  std::string tiny = "\x93NUMPY";
  tiny += std::string("\x01\x00\x01\x00{", 5);
  ASSERT_TRUE(sized(tiny, 40));
  t = ReadNpy(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
  std::remove(path.c_str());
}

// A file that cannot tell its size (a pipe) is read as it comes.
TEST(NpyTest, ReadsAPipe) {
  const std::string path = TempPath("pipe.npy");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  Tensor t = *Tensor::FromVector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  std::thread writer([&] {
    std::ofstream out(path, std::ios::binary);  // opens when the reader does
    out << *EncodeNpy(t);
  });
  absl::StatusOr<Tensor> back = ReadNpy(path);
  writer.join();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
  std::remove(path.c_str());
}

// A pipe is checked from its header too, and read no further than its
// header says: 64 MiB that is not a .npy, or a whole .npy with 64 MiB more
// behind it, is refused after the first bytes past what the header names (the
// writer is left blocked, and unblocked by the reader's close); a header for
// a TiB with a few bytes behind it is truncated data without a TiB buffer.
TEST(NpyTest, APipeIsReadNoFurtherThanItsHeaderSays) {
  const std::string path = TempPath("pipe_checked.npy");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  const auto previous = std::signal(SIGPIPE, SIG_IGN);  // the writer's after the close
  const Tensor t = *Tensor::FromVector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  const std::string big(64 << 20, '\0');
  const std::string lying =
      MakeNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (137438953472,), }", "abc");
  struct Case {
    std::string contents;
    absl::string_view error;
  };
  for (const Case& c : {Case{big, "not a .npy file"}, Case{*EncodeNpy(t) + big, "trailing data"},
                        Case{lying, "truncated data"}}) {
    SCOPED_TRACE(c.error);
    std::thread writer([&] {
      std::ofstream out(path, std::ios::binary);  // opens when the reader does
      out << c.contents;                          // fails once the reader has closed
    });
    absl::StatusOr<Tensor> read = ReadNpy(path);
    writer.join();
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument) << read.status();
    EXPECT_THAT(std::string(read.status().message()), HasSubstr(c.error));
    EXPECT_THAT(std::string(read.status().message()), HasSubstr(path));
  }
  std::signal(SIGPIPE, previous);
  std::remove(path.c_str());
}

std::string FileContents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A write that fails part way (here past a file-size limit, EFBIG, as a full
// disk's ENOSPC would) leaves the file that was there whole and no
// temporary beside it, and says why; a device (/dev/full) is written in
// place and its ENOSPC named; a directory is refused; a link's target is
// replaced and the link kept.
TEST(NpyTest, AFailedWriteLeavesTheOldFileAndSaysWhy) {
  const std::string path = TempPath("atomic.npy");
  const Tensor small = *Tensor::FromVector<double>({2}, {1, 2});
  ASSERT_TRUE(WriteNpy(path, small).ok());
  const std::string before = FileContents(path);
  const Tensor big =
      *Tensor::FromVector<double>({1 << 16}, std::vector<double>(1 << 16, 3.0));  // 512 KiB
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = old;
  limited.rlim_cur = 64 << 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  const absl::Status failed = WriteNpy(path, big);
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  EXPECT_EQ(failed.code(), absl::StatusCode::kResourceExhausted) << failed;
  EXPECT_THAT(std::string(failed.message()), HasSubstr(path + ": write: File too large"));
  EXPECT_EQ(FileContents(path), before);
  const std::string dir = path.substr(0, path.rfind('/'));
  bool temp_left = false;  // the directory holds no "atomic.npy.tmp-*"
  if (DIR* d = ::opendir(dir.c_str()); d != nullptr) {
    while (dirent* e = ::readdir(d)) {
      temp_left |= absl::StartsWith(e->d_name, path.substr(dir.size() + 1) + ".tmp-");
    }
    ::closedir(d);
  }
  EXPECT_FALSE(temp_left);

  const absl::Status full = WriteNpy("/dev/full", small);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_THAT(std::string(full.message()), HasSubstr("No space left on device"));
  const absl::Status directory = WriteNpy(dir, small);
  EXPECT_EQ(directory.code(), absl::StatusCode::kInvalidArgument) << directory;
  EXPECT_THAT(std::string(directory.message()), HasSubstr("Is a directory"));

  // A file replaced keeps its mode.
  ASSERT_EQ(::chmod(path.c_str(), 0604), 0);
  ASSERT_TRUE(WriteNpy(path, small).ok());
  struct stat mode {};
  ASSERT_EQ(::stat(path.c_str(), &mode), 0);
  EXPECT_EQ(mode.st_mode & 07777, 0604u);

  const std::string link = TempPath("atomic_link.npy");
  ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0) << std::strerror(errno);
  ASSERT_TRUE(WriteNpy(link, big).ok());
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(*ReadNpy(path), big);
  std::remove(link.c_str());
  std::remove(path.c_str());
}

TEST(NpyTest, MissingFileIsNotFoundNamingThePath) {
  absl::StatusOr<Tensor> t = ReadNpy("/nonexistent/dir/a.npy");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("/nonexistent/dir/a.npy"));
  t = ReadNpy("/tmp");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("/tmp: is a directory"));
}

TEST(NpyTest, AcceptsByteOrderVariants) {
  for (absl::string_view descr : {"<f4", "|f4", "=f4", "f4"}) {
    const std::string file =
        MakeNpy(absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (1,), }"),
                F32Bytes({2}));
    absl::StatusOr<Tensor> t = DecodeNpy(file, "a.npy");
    ASSERT_TRUE(t.ok()) << descr << ": " << t.status();
    EXPECT_EQ(t->ToVector<float>()[0], 2.0f);
  }
  // Keys in any order, double quotes, no trailing comma, version 2.
  const std::string file = MakeNpy(
      "{\"shape\": (1, 1), \"fortran_order\": False, \"descr\": \"<f8\"}", std::string(8, '\0'), 2);
  absl::StatusOr<Tensor> t = DecodeNpy(file, "b.npy");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kF64);
}

// Decodes `file` expecting INVALID_ARGUMENT with every one of `parts`.
void ExpectRejected(const std::string& file, std::initializer_list<absl::string_view> parts) {
  absl::StatusOr<Tensor> t = DecodeNpy(file, "bad.npy");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(t.status().message());
  EXPECT_THAT(message, HasSubstr("bad.npy"));
  for (absl::string_view part : parts) EXPECT_THAT(message, HasSubstr(std::string(part)));
}

TEST(NpyTest, RejectsFortranOrder) {
  ExpectRejected(
      MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", std::string(16, '\0')),
      {"fortran_order", "True"});
}

TEST(NpyTest, ComplexDescrsAreNumpysComplexTypes) {
  const Tensor c64 = *Tensor::FromVector<std::complex<float>>({1, 2}, {{1, 2}, {3, 4}});
  EXPECT_THAT(*EncodeNpy(c64), HasSubstr("'descr': '<c8'"));
  const Tensor c128 = *Tensor::FromVector<std::complex<double>>({1}, {{1, 2}});
  EXPECT_THAT(*EncodeNpy(c128), HasSubstr("'descr': '<c16'"));
  absl::StatusOr<Tensor> t = DecodeNpy(
      MakeNpy("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", F32Bytes({1, 2, 3, 4})),
      "z.npy");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kC64);
  ASSERT_EQ(t->as<std::complex<float>>().size(), 2u);
  EXPECT_EQ(t->as<std::complex<float>>()[1], std::complex<float>(3, 4));
  EXPECT_EQ(t->ToVector<double>(), std::vector<double>({1, 3}));  // the real parts
}

TEST(NpyTest, RejectsOtherDTypes) {
  for (absl::string_view descr : {">f4", "<i4", ">c8", "|u1", "<V2", "<f16", "<c32"}) {
    ExpectRejected(
        MakeNpy(absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (1,), }"),
                std::string(4, '\0')),
        {"descr", descr});
  }
  ExpectRejected(
      MakeNpy("{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')),
      {"big-endian"});
}

TEST(NpyTest, RejectsMalformedHeaders) {
  ExpectRejected("not an npy file at all", {"magic"});
  ExpectRejected("\x93NUMPY", {"magic"});
  std::string v4 = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "abcd");
  v4[6] = 4;
  ExpectRejected(v4, {"version", "4.0"});
  ExpectRejected(MakeNpy("{'descr': '<f4', 'shape': (1,), }", "abcd"),
                 {"missing", "fortran_order"});
  ExpectRejected(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", ""),
                 {"unknown key", "'x'"});
  ExpectRejected(MakeNpy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", ""),
                 {"fortran_order", "True or False", "Maybe"});
  ExpectRejected(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }", ""),
                 {"shape", "-1"});
  ExpectRejected(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", ""),
                 {"shape", "tuple"});
  ExpectRejected(MakeNpy("{'descr': '<f4, 'fortran_order': False, 'shape': (1,), }", "abcd"),
                 {"header"});
  ExpectRejected(
      MakeNpy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (), }", "abcd"),
      {"duplicate", "descr"});
  ExpectRejected(
      MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""),
      {"shape", "overflows"});
}

// A shape whose byte count passes 2^62 is refused (it must not wrap around
// 2^64 to the size of the data the file has).
TEST(NpyTest, RejectsShapesOfMoreThan2To62Bytes) {
  // 2^62 complex128 elements: 2^66 bytes, 0 modulo 2^64, and no data.
  const std::string file =
      MakeNpy("{'descr': '<c16', 'fortran_order': False, 'shape': (4611686018427387904,), }", "");
  absl::StatusOr<Tensor> t = DecodeNpy(file, "a.npy");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("more than 2^62 bytes"));
}

TEST(NpyTest, RejectsTruncatedFiles) {
  const std::string good = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                   F32Bytes({0, 1, 2, 3, 4, 5}));
  ExpectRejected(good.substr(0, good.size() - 1), {"truncated data", "needs 24 bytes", "has 23"});
  ExpectRejected(good.substr(0, 100), {"truncated header", "118"});
  ExpectRejected(good.substr(0, 9), {"truncated"});
  ExpectRejected(good + "x", {"trailing data", "has 25"});
}

TEST(NpyTest, EncodeRejectsBFloat16AndBadVersion) {
  Tensor bf = *Tensor::Zeros(DType::kBF16, {2});
  EXPECT_EQ(EncodeNpy(bf).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeNpy(Tensor(), 5).status().code(), absl::StatusCode::kInvalidArgument);
  const std::string path = TempPath("bf16.npy");
  absl::Status s = WriteNpy(path, bf);
  EXPECT_THAT(std::string(s.message()), HasSubstr(path));
}

TEST(NpyHeaderTest, FormatThenParse) {
  internal::NpyHeader h{"<f8", false, {5}};
  EXPECT_EQ(internal::FormatNpyHeader(h),
            "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }");
  absl::StatusOr<internal::NpyHeader> back = internal::ParseNpyHeader(internal::FormatNpyHeader(h));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->shape, h.shape);
  EXPECT_EQ(internal::FormatNpyHeader({"<f4", false, {}}),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (), }");
}

}  // namespace
}  // namespace linalgd::client
