#include "linalgd/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/src/npy_header.h"

namespace linalgd::client {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";
constexpr size_t kAlign = 64;
// The longest header dict read (numpy's own np.load takes 10,000 bytes
// unless told otherwise; a rank-64 shape of 19-digit sizes needs ~1,400).
constexpr uint64_t kMaxHeaderBytes = 1 << 20;

absl::Status Invalid(absl::string_view name, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": ", what));
}

// Maps a numpy descr to a dtype; only little-endian floats and complex
// numbers are accepted.
absl::StatusOr<DType> DTypeFromDescr(absl::string_view name, absl::string_view descr) {
  absl::string_view code = descr;
  if (!code.empty() && (code[0] == '<' || code[0] == '|' || code[0] == '=')) {
    code.remove_prefix(1);
  }
  if (code == "f2") return DType::kF16;
  if (code == "f4") return DType::kF32;
  if (code == "f8") return DType::kF64;
  if (code == "c8") return DType::kC64;
  if (code == "c16") return DType::kC128;
  const bool big = !descr.empty() && descr[0] == '>';
  return Invalid(name, absl::StrCat("header field 'descr' is '", descr, "': ",
                                    big ? "big-endian data is not supported" : "unsupported dtype",
                                    " (expected '<f2', '<f4', '<f8', '<c8' or '<c16')"));
}

uint32_t ReadLittleEndian(absl::string_view bytes) {
  uint32_t v = 0;
  for (size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

void AppendLittleEndian(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Splits `contents` into the header dict text and the data that follows.
absl::Status SplitNpy(absl::string_view contents, absl::string_view name, absl::string_view& header,
                      absl::string_view& data) {
  if (contents.size() < kMagic.size() + 2 || contents.substr(0, kMagic.size()) != kMagic) {
    return Invalid(name, "not a .npy file (missing the \\x93NUMPY magic string)");
  }
  const int major = static_cast<unsigned char>(contents[6]);
  const int minor = static_cast<unsigned char>(contents[7]);
  if (major < 1 || major > 3 || minor != 0) {
    return Invalid(
        name, absl::StrCat("format version is ", major, ".", minor, " (supported: 1.0, 2.0, 3.0)"));
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t start = 8 + len_bytes;
  if (contents.size() < start) return Invalid(name, "truncated before the header length");
  const uint64_t header_len = ReadLittleEndian(contents.substr(8, len_bytes));
  if (header_len > kMaxHeaderBytes) {
    return Invalid(name, absl::StrCat("header length is ", header_len, " bytes, more than the ",
                                      kMaxHeaderBytes, " this reader takes"));
  }
  if (contents.size() - start < header_len) {
    return Invalid(name, absl::StrCat("truncated header: header length is ", header_len,
                                      " bytes, the file has ", contents.size() - start));
  }
  header = contents.substr(start, header_len);
  data = contents.substr(start + header_len);
  return absl::OkStatus();
}

// What a .npy file's header says: its tensor's dtype and shape, where in
// the file its data starts and how many bytes it has.
struct NpyLayout {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::string descr;
  size_t data_offset = 0;
  uint64_t data_bytes = 0;
};

// INVALID_ARGUMENT when `have` data bytes are not what `layout` needs;
// `more`: `have` is what was read of a stream that had more.
absl::Status CheckDataBytes(const NpyLayout& layout, uint64_t have, absl::string_view name,
                            bool more = false) {
  if (have == layout.data_bytes && !more) return absl::OkStatus();
  return Invalid(
      name, absl::StrCat(have < layout.data_bytes ? "truncated data" : "trailing data", ": shape (",
                         absl::StrJoin(layout.shape, ", "), ") of '", layout.descr, "' needs ",
                         layout.data_bytes, " bytes, the file has ", more ? "more than " : "",
                         more ? layout.data_bytes : have));
}

// The header of a .npy file checked as DecodeNpy documents, from `head`:
// its first bytes, through the end of its header (or the whole file, when
// shorter). The data's size is not checked here.
absl::StatusOr<NpyLayout> ParseNpyLayout(absl::string_view head, absl::string_view name) {
  absl::string_view header_text, rest;
  if (absl::Status s = SplitNpy(head, name, header_text, rest); !s.ok()) return s;
  absl::StatusOr<internal::NpyHeader> header = internal::ParseNpyHeader(header_text);
  if (!header.ok()) return Invalid(name, header.status().message());
  if (header->fortran_order) {
    return Invalid(name,
                   "header field 'fortran_order' is True: only C order is supported "
                   "(use numpy.ascontiguousarray before saving)");
  }
  absl::StatusOr<DType> dtype = DTypeFromDescr(name, header->descr);
  if (!dtype.ok()) return dtype.status();
  absl::StatusOr<uint64_t> bytes = NumBytes(*dtype, header->shape);
  if (!bytes.ok()) {
    return Invalid(name, absl::StrCat("header field 'shape': ", bytes.status().message()));
  }
  return NpyLayout{*dtype, header->shape, header->descr, head.size() - rest.size(), *bytes};
}

// Checks a .npy file of `file_size` bytes as DecodeNpy documents, from
// `head` (ParseNpyLayout's).
absl::StatusOr<NpyLayout> CheckNpy(absl::string_view head, uint64_t file_size,
                                   absl::string_view name) {
  absl::StatusOr<NpyLayout> layout = ParseNpyLayout(head, name);
  if (!layout.ok()) return layout.status();
  if (absl::Status s = CheckDataBytes(*layout, file_size - layout->data_offset, name); !s.ok()) {
    return s;
  }
  return layout;
}

// Appends up to `n` more bytes of `in` to `out`; false on a read error.
bool ReadMore(std::ifstream& in, std::string& out, uint64_t n) {
  const size_t had = out.size();
  out.resize(had + n);
  in.read(out.data() + had, static_cast<std::streamsize>(n));
  out.resize(had + static_cast<size_t>(in.gcount()));
  return !in.bad();
}

absl::Status ReadError(const std::string& path) {
  return absl::DataLossError(absl::StrCat(path, ": read error"));
}

// A file that can tell its size: its first bytes, through the longest
// header taken, are read and checked first, so that a file that is not a
// whole .npy costs no buffer of its size; then the rest of its data is read
// into the tensor's buffer, behind the part that came with the header.
absl::StatusOr<Tensor> ReadSizedNpy(std::ifstream& in, uint64_t size, const std::string& path) {
  // Magic, version, a header length of 2 or 4 bytes, the header.
  std::string head;
  if (!ReadMore(in, head, std::min<uint64_t>(size, 12 + kMaxHeaderBytes))) return ReadError(path);
  absl::StatusOr<NpyLayout> layout = CheckNpy(head, size, path);
  if (!layout.ok()) return layout.status();
  std::string data;
  try {
    data.resize(size - layout->data_offset);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(path, ": its ", size - layout->data_offset,
                                                     " bytes of data do not fit in memory"));
  }
  const size_t have = head.size() - layout->data_offset;
  std::memcpy(data.data(), head.data() + layout->data_offset, have);
  in.read(data.data() + have, static_cast<std::streamsize>(data.size() - have));
  if (static_cast<size_t>(in.gcount()) != data.size() - have) return ReadError(path);
  return Tensor::FromBytes(layout->dtype, std::move(layout->shape), std::move(data));
}

// A file that cannot tell its size (a pipe): its first bytes, through the
// longest header taken, are read and checked first; then its data as it
// comes, in pieces, so that memory follows the bytes that arrive, not the
// header's claim; one byte past what the header names is trailing data
// (the rest is not read).
absl::StatusOr<Tensor> ReadStreamedNpy(std::ifstream& in, const std::string& path) {
  constexpr uint64_t kPiece = uint64_t{64} << 20;
  std::string data;
  if (!ReadMore(in, data, 12 + kMaxHeaderBytes)) return ReadError(path);
  absl::StatusOr<NpyLayout> layout = ParseNpyLayout(data, path);
  if (!layout.ok()) return layout.status();
  data.erase(0, layout->data_offset);
  try {
    while (data.size() < layout->data_bytes && in.good()) {
      if (!ReadMore(in, data, std::min<uint64_t>(kPiece, layout->data_bytes - data.size()))) {
        return ReadError(path);
      }
    }
    if (data.size() == layout->data_bytes && in.good() && !ReadMore(in, data, 1)) {
      return ReadError(path);
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": its ", layout->data_bytes, " bytes of data do not fit in memory"));
  }
  const bool more = data.size() > layout->data_bytes;
  if (absl::Status s = CheckDataBytes(*layout, data.size(), path, more); !s.ok()) return s;
  return Tensor::FromBytes(layout->dtype, std::move(layout->shape), std::move(data));
}

}  // namespace

absl::StatusOr<Tensor> DecodeNpy(absl::string_view contents, absl::string_view name) {
  absl::StatusOr<NpyLayout> layout = CheckNpy(contents, contents.size(), name);
  if (!layout.ok()) return layout.status();
  return Tensor::FromBytes(layout->dtype, std::move(layout->shape),
                           std::string(contents.substr(layout->data_offset)));
}

namespace {

// Everything of tensor's .npy file before its data: magic, version, header
// length and the padded header dict (EncodeNpy documents `version`).
absl::StatusOr<std::string> NpyPrefix(const Tensor& tensor, int version) {
  if (tensor.dtype() == DType::kBF16) {
    return absl::InvalidArgumentError(
        "bf16 tensors cannot be written as .npy (numpy has no "
        "bfloat16 dtype); convert to f32 first");
  }
  if (version < 0 || version > 3) {
    return absl::InvalidArgumentError(absl::StrCat("unknown .npy format version ", version));
  }
  internal::NpyHeader header;
  header.descr = absl::StrCat(IsComplex(tensor.dtype()) ? "<c" : "<f", DTypeSize(tensor.dtype()));
  header.shape = tensor.shape();
  std::string dict = internal::FormatNpyHeader(header);
  if (version == 0) version = dict.size() + 11 + kAlign > 65535 ? 2 : 1;
  const size_t prefix = 8 + (version == 1 ? 2 : 4);
  const size_t padded = (prefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  dict.append(padded - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  if (version == 1 && dict.size() > 65535) {
    return absl::InvalidArgumentError("the .npy header is too long for format 1.0");
  }
  std::string out(kMagic);
  out.push_back(static_cast<char>(version));
  out.push_back('\0');
  AppendLittleEndian(out, static_cast<uint32_t>(dict.size()), version == 1 ? 2 : 4);
  out += dict;
  return out;
}

}  // namespace

absl::StatusOr<std::string> EncodeNpy(const Tensor& tensor, int version) {
  absl::StatusOr<std::string> out = NpyPrefix(tensor, version);
  if (!out.ok()) return out.status();
  out->reserve(out->size() + tensor.bytes().size());
  *out += tensor.bytes();
  return out;
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a .npy file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string why = absl::StrCat(path, ": ", std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(why);
    if (err == EACCES) return absl::PermissionDeniedError(why);
    return absl::UnavailableError(why);
  }
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size >= 0) {
    in.seekg(0, std::ios::beg);
    return ReadSizedNpy(in, static_cast<uint64_t>(size), path);
  }
  in.clear();
  return ReadStreamedNpy(in, path);
}

namespace {

// A status naming `path` and errno `err`, its code by the cause.
absl::Status FileError(const std::string& path, absl::string_view what, int err) {
  const std::string why = absl::StrCat(path, ": ", what, ": ", std::strerror(err));
  switch (err) {
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(why);
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(why);
    case EISDIR:
      return absl::InvalidArgumentError(why);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return absl::ResourceExhaustedError(why);
    default:
      return absl::DataLossError(why);
  }
}

// Writes every byte of `parts` to fd; the errno of a failed write, else 0.
int WriteAll(int fd, std::initializer_list<absl::string_view> parts) {
  for (absl::string_view part : parts) {
    while (!part.empty()) {
      const ssize_t n = ::write(fd, part.data(), part.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return n < 0 ? errno : EIO;
      part.remove_prefix(static_cast<size_t>(n));
    }
  }
  return 0;
}

}  // namespace

absl::Status WriteNpy(const std::string& path, const Tensor& tensor, int version) {
  // The prefix, then the tensor's bytes as they are (no copy of the data).
  absl::StatusOr<std::string> prefix = NpyPrefix(tensor, version);
  if (!prefix.ok()) return Invalid(path, prefix.status().message());
  const absl::string_view data = tensor.bytes();
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return FileError(path, "open", EISDIR);
  if (exists && !S_ISREG(st.st_mode)) {
    // Not a file (/dev/stdout, a pipe): written in place, as it is.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return FileError(path, "open", errno);
    const int err = WriteAll(fd, {*prefix, data});
    const int closed = ::close(fd) == 0 ? 0 : errno;
    if (err != 0 || closed != 0) return FileError(path, "write", err != 0 ? err : closed);
    return absl::OkStatus();
  }
  // A file: written whole beside it, then renamed over it, so that a write
  // that fails (a full disk) leaves what was there. A link is followed: the
  // file it names is replaced, not the link; a file replaced keeps its mode.
  std::string target = path;
  if (char* real = ::realpath(path.c_str(), nullptr); real != nullptr) {
    target = real;
    std::free(real);
  }
  int fd = -1;
  std::string temp;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    temp = absl::StrCat(target, ".tmp-", ::getpid(), "-", attempt);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // umask applies
    if (fd < 0 && errno != EEXIST) return FileError(path, "open", errno);
  }
  if (fd < 0) return FileError(path, "open", EEXIST);
  int err = exists && ::fchmod(fd, st.st_mode & 07777) != 0 ? errno : 0;
  if (err == 0) err = WriteAll(fd, {*prefix, data});
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(temp.c_str(), target.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(temp.c_str());
    return FileError(path, "write", err);
  }
  return absl::OkStatus();
}

}  // namespace linalgd::client
