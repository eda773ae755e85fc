#include "server/store/shm_registry.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/caller_string.h"
#include "server/common/status_macros.h"
#include "server/store/resident_id.h"

namespace linalgd {

class ShmRegistry::Usage {
 public:
  struct Count {
    int regions = 0;
    int64_t bytes = 0;
  };
  absl::Mutex mu;
  absl::flat_hash_map<uid_t, Count> by_uid ABSL_GUARDED_BY(mu);
  Count total ABSL_GUARDED_BY(mu);

  void Add(uid_t uid, int64_t bytes, int sign) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Count& mine = by_uid[uid];
    mine.regions += sign;
    mine.bytes += sign * bytes;
    if (mine.regions == 0) by_uid.erase(uid);
    total.regions += sign;
    total.bytes += sign * bytes;
  }
};

// One mapping; unpinned, then unmapped, when the last reference goes, and
// only then no longer counted against the caps.
class ShmRegistry::Region {
 public:
  Region(void* base, int64_t size, Inode inode) : base_(base), size_(size), inode_(inode) {}
  ~Region() {
    pin_.reset();
    munmap(base_, static_cast<size_t>(size_));
    if (usage_) {
      absl::MutexLock lock(&usage_->mu);
      usage_->Add(uid_, size_, -1);
    }
  }
  // From here on the region's share of `usage` (reserved already) is given
  // back when it is unmapped.
  void Count(std::shared_ptr<Usage> usage, uid_t uid) {
    usage_ = std::move(usage);
    uid_ = uid;
  }
  std::byte* base() const { return static_cast<std::byte*>(base_); }
  int64_t size() const { return size_; }
  const Inode& inode() const { return inode_; }
  bool pinned() const { return pinned_; }
  void set_pin(std::shared_ptr<void> pin) {
    pin_ = std::move(pin);
    pinned_ = true;
  }

 private:
  void* const base_;
  const int64_t size_;
  const Inode inode_;
  std::shared_ptr<void> pin_;
  bool pinned_ = false;
  std::shared_ptr<Usage> usage_;
  uid_t uid_ = 0;
};

namespace {

constexpr int kRequiredSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

absl::Status Errno(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// A memfd on shmem (not hugetlbfs, whose faults can raise SIGBUS when the
// huge-page pool runs dry), sealed against resizing, left writable.
absl::Status CheckMemfd(int fd) {
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) return Errno("fd: not a memfd (F_GET_SEALS)");
  if ((seals & kRequiredSeals) != kRequiredSeals) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fd: seals 0x", absl::Hex(seals), " lack F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL (0x",
        absl::Hex(kRequiredSeals), "): the memory could shrink under the server's mapping"));
  }
  if ((seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) != 0) {
    return absl::InvalidArgumentError("fd: sealed against writes; results could not be written");
  }
  struct statfs fs {};
  if (fstatfs(fd, &fs) != 0) return Errno("fd: fstatfs");
  if (fs.f_type != TMPFS_MAGIC) {
    return absl::InvalidArgumentError(
        absl::StrCat("fd: filesystem type 0x", absl::Hex(fs.f_type),
                     " is not shmem (a memfd_create without MFD_HUGETLB)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<void*> Map(int fd, int64_t size) {
  void* base = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED && errno == EACCES) {  // the fd is not open for reading and writing
    return absl::InvalidArgumentError(absl::StrCat(
        "fd: mmap of ", size, " bytes read-write: ", std::strerror(errno),
        "; the server reads operands from the region and writes results into it, so hand over "
        "an fd opened read-write (memfd_create's own fd, or O_RDWR)"));
  }
  if (base == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap of ", size, " bytes: ", std::strerror(errno)));
  }
  return base;
}

// Compares in time independent of where `a` and `b` differ.
bool SameSecret(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

absl::Status NotRegistered(absl::string_view field, absl::string_view id) {
  return absl::NotFoundError(absl::StrCat(
      field, Quoted(id),
      " is not a registered shared-memory region of this caller (an id "
      "needs its secret; regions end with Unregister or with their Unix-socket connection)"));
}

}  // namespace

ShmRegistry::ShmRegistry(HostPinner pinner, ShmLimits limits, std::string replica)
    : pinner_(std::move(pinner)),
      limits_(limits),
      replica_(std::move(replica)),
      usage_(std::make_shared<Usage>()) {}

ShmRegistry::~ShmRegistry() = default;

absl::Status ShmRegistry::Reserve(const Inode& inode, int64_t bytes, uid_t uid) {
  if (inodes_.contains(inode)) {
    return absl::AlreadyExistsError("fd: this memory is already registered (one region per memfd)");
  }
  absl::MutexLock lock(&usage_->mu);
  const Usage::Count total = usage_->total;
  const auto it = usage_->by_uid.find(uid);
  const Usage::Count mine = it == usage_->by_uid.end() ? Usage::Count{} : it->second;
  // Mapped: registered, or unregistered but still held by a call in flight.
  if (total.regions >= limits_.max_regions || total.bytes + bytes > limits_.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "shared memory: ", total.regions, " regions of ", total.bytes,
        " bytes are mapped (registered, or unregistered and still in use by a call); with ", bytes,
        " more the caps --shm-max-regions ", limits_.max_regions, " / --shm-max-bytes ",
        limits_.max_bytes, " would be passed"));
  }
  if (mine.regions >= limits_.max_regions_per_uid ||
      mine.bytes + bytes > limits_.max_bytes_per_uid) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "shared memory: uid ", uid, " has ", mine.regions, " regions of ", mine.bytes,
        " bytes mapped (registered, or unregistered and still in use by a call); with ", bytes,
        " more the caps --shm-max-regions-per-uid ", limits_.max_regions_per_uid,
        " / --shm-max-bytes-per-uid ", limits_.max_bytes_per_uid, " would be passed"));
  }
  inodes_.insert(inode);
  usage_->Add(uid, bytes, 1);
  return absl::OkStatus();
}

void ShmRegistry::Unreserve(const Inode& inode, int64_t bytes, uid_t uid) {
  inodes_.erase(inode);
  absl::MutexLock lock(&usage_->mu);
  usage_->Add(uid, bytes, -1);
}

absl::StatusOr<ShmGrant> ShmRegistry::Register(int fd, const ShmPeer& peer) {
  if (absl::Status s = CheckMemfd(fd); !s.ok()) return s;
  struct stat st {};
  if (fstat(fd, &st) != 0) return Errno("fd: fstat");
  if (!S_ISREG(st.st_mode) || st.st_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("fd: size ", st.st_size, " bytes; a region needs at least one byte"));
  }
  const int64_t size = st.st_size;
  const Inode inode{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Reserve(inode, size, peer.uid); !s.ok()) return s;
  }
  absl::StatusOr<ShmGrant> grant = MapAndAdd(fd, size, inode, peer);
  if (!grant.ok()) {
    absl::MutexLock lock(&mu_);
    Unreserve(inode, size, peer.uid);
  }
  return grant;
}

absl::StatusOr<ShmGrant> ShmRegistry::MapAndAdd(int fd, int64_t size, const Inode& inode,
                                                const ShmPeer& peer) {
  absl::StatusOr<std::string> id = NewResidentId(replica_);
  absl::StatusOr<std::string> secret = NewResidentId();
  if (!id.ok()) return id.status();
  if (!secret.ok()) return secret.status();
  absl::StatusOr<void*> base = Map(fd, size);
  if (!base.ok()) return base.status();
  auto region = std::make_shared<Region>(*base, size, inode);
  if (pinner_) {
    absl::StatusOr<std::shared_ptr<void>> pin = pinner_(*base, static_cast<size_t>(size));
    if (!pin.ok()) return pin.status();  // `region` unmaps
    region->set_pin(std::move(*pin));
  }
  ShmGrant grant{*id, *secret, size, region->pinned()};
  region->Count(usage_, peer.uid);  // added: its share goes when it is unmapped
  absl::MutexLock lock(&mu_);
  regions_.emplace(*std::move(id), Entry{std::move(region), *std::move(secret), peer});
  return grant;
}

std::shared_ptr<ShmRegistry::Region> ShmRegistry::Erase(
    absl::flat_hash_map<std::string, Entry>::iterator it) {
  std::shared_ptr<Region> region = std::move(it->second.region);
  inodes_.erase(region->inode());  // the caps count it until it is unmapped (~Region)
  regions_.erase(it);
  return region;
}

const ShmRegistry::Entry* ShmRegistry::Claim(absl::string_view id, absl::string_view secret,
                                             absl::string_view owner) {
  auto it = regions_.find(id);
  if (it == regions_.end() || !SameSecret(it->second.secret, secret)) return nullptr;
  Entry& entry = it->second;
  if (entry.owner.empty()) entry.owner = std::string(owner);
  return entry.owner == owner ? &entry : nullptr;
}

absl::Status ShmRegistry::Unregister(absl::string_view id, absl::string_view secret,
                                     absl::string_view owner) {
  std::shared_ptr<Region> region;  // unmapped here, outside the lock, if unused
  absl::MutexLock lock(&mu_);
  if (Claim(id, secret, owner) == nullptr) {
    LINALGD_RETURN_IF_ERROR(CheckReplica("shared-memory region", id, replica_));
    return NotRegistered("name: ", id);
  }
  region = Erase(regions_.find(id));
  return absl::OkStatus();
}

int ShmRegistry::ReleaseConnection(uint64_t connection) {
  std::vector<std::shared_ptr<Region>> released;  // unmapped outside the lock
  absl::MutexLock lock(&mu_);
  for (auto it = regions_.begin(); it != regions_.end();) {
    auto next = std::next(it);
    if (it->second.peer.connection == connection) released.push_back(Erase(it));
    it = next;
  }
  return static_cast<int>(released.size());
}

int ShmRegistry::regions() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(regions_.size());
}

absl::StatusOr<ShmRange> ShmRegistry::Resolve(absl::string_view id, absl::string_view secret,
                                              int64_t offset, int64_t bytes, int64_t align,
                                              absl::string_view field, absl::string_view owner) {
  std::shared_ptr<Region> region;
  {
    absl::MutexLock lock(&mu_);
    const Entry* entry = Claim(id, secret, owner);
    if (entry == nullptr) {
      LINALGD_RETURN_IF_ERROR(CheckReplica("shared-memory region", id, replica_));
      return NotRegistered(absl::StrCat(field, ".shm.region: "), id);
    }
    region = entry->region;
  }
  if (offset < 0 || bytes < 0 || offset > region->size() || bytes > region->size() - offset) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".shm: offset ", offset, " + bytes ",
                                                   bytes, " is outside region ", Quoted(id), " of ",
                                                   region->size(), " bytes"));
  }
  if (align > 1 && offset % align != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".shm.offset: ", offset, " is not a multiple of the element size ", align));
  }
  ShmRange range;
  range.data = region->base() + offset;
  range.bytes = bytes;
  range.keep = std::move(region);
  return range;
}

}  // namespace linalgd
