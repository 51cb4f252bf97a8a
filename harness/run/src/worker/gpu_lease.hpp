// One emulated GPU shared by two processes: the training worker and the
// prefill worker that borrows its bubbles (BubbleTea). Both map the same small
// file in the run's control directory (bind-mounted into every container at
// the same path) and agree on one timeline through a lock-free word in it:
// busy_until_ns, CLOCK_MONOTONIC, the end of the latest reservation.
//
//   training  reserve(): start = max(now, busy_until), busy_until = start +
//             duration (compare-and-swap). A start after `now` means another
//             process held the GPU: that wait is the training delay. With a
//             hold, busy_until goes `hold` past the end: the next training op
//             that comes within it starts at once (as a real framework queues
//             its next kernel behind the running one), while prefill, which
//             only leases a free GPU, cannot slip into the gap between them.
//   prefill   try_lease(): only if the GPU is free now (busy_until <= now),
//             busy_until = now + duration; else nothing is reserved (the
//             bubble was not where it was predicted).
//
// Reservations never overlap: each moves busy_until forward from the value it
// read, and a CAS that lost to another process retries from the new value.
// The owner word says who made the latest reservation (written just after
// it, for diagnostics); whose each busy interval was is recorded by the
// process that made it (training events, prefill spans).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

namespace wanlab::harness::run_detail {

enum class GpuOwner : std::int64_t { none = 0, training = 1, prefill = 2 };

class GpuLease {
 public:
  struct Reservation {
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::int64_t delayed_ns = 0;  // start - asked: another process held the GPU
  };

  // Creates the file at `path` (replacing one left there), the GPU idle.
  // Throws std::system_error naming the path.
  static GpuLease create(const std::string& path);
  // Maps a file made by create(). Throws std::system_error naming the path, or
  // std::runtime_error for a file that is not a lease.
  static GpuLease open(const std::string& path);

  GpuLease(GpuLease&& other) noexcept;
  GpuLease& operator=(GpuLease&& other) noexcept;
  GpuLease(const GpuLease&) = delete;
  GpuLease& operator=(const GpuLease&) = delete;
  ~GpuLease();

  // [max(now_ns, busy_until), + duration_ns): always succeeds. busy_until
  // becomes the end + hold_ns; while no other process has reserved since,
  // this object's next reserve() may start from the end, inside that hold.
  Reservation reserve(std::int64_t now_ns, std::uint64_t duration_ns, GpuOwner owner = GpuOwner::training,
                      std::uint64_t hold_ns = 0);
  // [now_ns, now_ns + duration_ns) if the GPU is free at now_ns; else nullopt.
  std::optional<Reservation> try_lease(std::int64_t now_ns, std::uint64_t duration_ns,
                                       GpuOwner owner = GpuOwner::prefill);

  std::int64_t busy_until_ns() const;
  GpuOwner last_owner() const;
  const std::string& path() const { return path_; }

  struct Shared;  // the file's layout (gpu_lease.cpp)

 private:
  GpuLease(std::string path, Shared* shared) : path_(std::move(path)), shared_(shared) {}
  void unmap() noexcept;

  std::string path_;
  Shared* shared_ = nullptr;  // MAP_SHARED, one page
  // This process's last reservation: the busy_until it wrote and where its
  // work ended (before the hold). Another process's reservation since then
  // moved busy_until, so the hold is ours only while the word still reads held_until_.
  std::int64_t held_until_ns_ = -1;
  std::int64_t work_end_ns_ = 0;
};

}  // namespace wanlab::harness::run_detail
