// Read-only windows of a file mapped into memory, so the comparison's kernels can read a
// tensor's bytes where the page cache holds them instead of copying them first.
//
// A mapped file that shrinks while it is read (another process truncates it) makes the
// next access raise SIGBUS. Every access to a mapping therefore runs inside
// guard_mapped_reads, which turns that signal into a returned false for the thread that
// made the access; a SIGBUS anywhere else keeps its previous disposition.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace diagnose::compare {

class MappedRange {
 public:
  // Maps `size` bytes of `fd` from `offset` on (any offset: the mapping starts at the page
  // below it). nullptr when the system refuses (a file system without mmap, no address space).
  static std::unique_ptr<MappedRange> map(int fd, uint64_t offset, uint64_t size);
  ~MappedRange();
  MappedRange(const MappedRange&) = delete;
  MappedRange& operator=(const MappedRange&) = delete;

  uint64_t offset() const { return offset_; }
  uint64_t size() const { return size_; }
  const uint8_t* data() const { return data_; }  // the byte at offset()
  bool covers(uint64_t offset, uint64_t size) const { return offset >= offset_ && offset - offset_ + size <= size_; }

 private:
  MappedRange(void* base, uint64_t length, uint64_t offset, uint64_t size, const uint8_t* data)
      : base_(base), length_(length), offset_(offset), size_(size), data_(data) {}
  void* base_;
  uint64_t length_;
  uint64_t offset_, size_;
  const uint8_t* data_;
};

// Runs `body` and returns true, or returns false as soon as one of its reads from a mapping
// raises SIGBUS. `body` is left at that point: it must hold nothing that needs a destructor
// while it reads mapped bytes (the comparison's kernels and decoders do not).
bool guard_mapped_reads(const std::function<void()>& body);

}  // namespace diagnose::compare
