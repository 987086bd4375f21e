// Writer and reader together: round trips, deduplication, chunking, locking, concurrency,
// reading a store while it is written, and recovery after a writer is killed.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "dynrep/store/reader.h"
#include "dynrep/store/writer.h"
#include "store/testing/temp_dir.h"

namespace dynrep {
namespace {

using testing::TempDir;

std::string pattern(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  // Half random, half repetitive, so chunks compress differently.
  for (size_t i = 0; i < n; ++i) s[i] = i % 2 ? char(rng()) : char('a' + i % 7);
  return s;
}

std::unique_ptr<StoreWriter> mustCreate(const std::string& path, WriterOptions o = {}) {
  auto w = StoreWriter::create(path, o);
  EXPECT_TRUE(w.isOk()) << w.status().toString();
  return std::move(*w);
}

std::unique_ptr<StoreReader> mustOpen(const std::string& path) {
  auto r = StoreReader::open(path);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return r.isOk() ? std::move(*r) : nullptr;
}

TEST(StoreTest, BlobsAndRecordsRoundTrip) {
  TempDir dir;
  std::string path = dir.file("a.dynrep");
  WriterOptions o;
  o.chunkSize = 1000;  // forces multi-chunk blobs
  auto w = mustCreate(path, o);
  std::string big = pattern(10'500, 1), small = "x";
  BlobKey kb = *w->putBlob(big);
  BlobKey ks = *w->putBlob(small);
  BlobKey ke = *w->putBlob("");
  ASSERT_TRUE(w->putRecord(16, "first").isOk());
  ASSERT_TRUE(w->putRecord(999, "unknown kind").isOk());
  ASSERT_TRUE(w->close().isOk());

  auto r = mustOpen(path);
  EXPECT_EQ(r->state(), StoreState::Finished);
  EXPECT_EQ(*r->readBlob(kb), big);
  EXPECT_EQ(*r->readBlob(ks), small);
  EXPECT_EQ(*r->readBlob(ke), "");
  EXPECT_EQ(r->findBlob(kb)->chunks, 11u);
  ASSERT_EQ(r->recordCount(), 2u);
  EXPECT_EQ(*r->recordPayload(0), "first");
  EXPECT_EQ(r->recordKind(1), 999);
  EXPECT_EQ(r->readBlob(BlobKey::of("absent")).status().code(), Status::Code::NotFound);
  std::vector<Status> problems = r->verify();
  EXPECT_TRUE(problems.empty()) << problems[0].toString();
}

TEST(StoreTest, StreamReadsInSmallPiecesAndMatches) {
  TempDir dir;
  std::string path = dir.file("s.dynrep");
  WriterOptions o;
  o.chunkSize = 777;
  auto w = mustCreate(path, o);
  std::string big = pattern(5000, 2);
  BlobKey k = *w->putBlob(big);
  ASSERT_TRUE(w->close().isOk());
  auto r = mustOpen(path);
  auto s = r->openBlob(k);
  ASSERT_TRUE(s.isOk());
  std::string got;
  char buf[333];
  for (;;) {
    auto n = (*s)->read(buf, sizeof buf);
    ASSERT_TRUE(n.isOk()) << n.status().toString();
    if (*n == 0) break;
    got.append(buf, *n);
  }
  EXPECT_EQ(got, big);
}

TEST(StoreTest, IdenticalBlobsAreStoredOnce) {
  TempDir dir;
  std::string path = dir.file("d.dynrep");
  auto w = mustCreate(path);
  std::string data = pattern(100'000, 3);
  BlobKey a = *w->putBlob(data), b = *w->putBlob(data);
  EXPECT_EQ(a, b);
  ASSERT_TRUE(w->close().isOk());
  auto r = mustOpen(path);
  ASSERT_EQ(r->blobs().size(), 1u);
  EXPECT_EQ(r->blobs()[0].chunks, 1u);
}

TEST(StoreTest, FileBlobEqualsMemoryBlob) {
  TempDir dir;
  std::string src = dir.file("src.bin"), path = dir.file("f.dynrep");
  std::string data = pattern(3'000'000, 4);
  testing::writeFile(src, data);
  WriterOptions o;
  o.chunkSize = 1 << 20;
  auto w = mustCreate(path, o);
  int fd = ::open(src.c_str(), O_RDONLY);
  BlobKey fromFile = *w->putBlobFromFile(fd, 100);
  ::close(fd);  // the writer keeps its own descriptor
  ASSERT_TRUE(w->close().isOk());
  EXPECT_EQ(fromFile, BlobKey::of(std::string_view(data).substr(100)));
  EXPECT_EQ(*mustOpen(path)->readBlob(fromFile), data.substr(100));
}

// Queued file chunks must not each keep a descriptor: a job storing thousands of files would
// otherwise run out of them at ordinary `ulimit -n` settings.
TEST(StoreTest, ManyFileBlobsStayWithinAFewDescriptors) {
  TempDir dir;
  std::vector<std::string> sources;
  for (int i = 0; i < 400; ++i) {
    sources.push_back(dir.file("src" + std::to_string(i)));
    testing::writeFile(sources.back(), pattern(i % 2 ? 9000 : 3000, uint32_t(i)));  // half multi-chunk
  }
  WriterOptions o;
  o.chunkSize = 4096;
  o.maxPendingBytes = 32 * 1024;
  o.level = 19;  // a slow writer thread, so the caller runs ahead as far as the queue lets it
  auto w = mustCreate(dir.file("many.dynrep"), o);
  struct rlimit old;
  ::getrlimit(RLIMIT_NOFILE, &old);
  struct rlimit low = old;
  low.rlim_cur = 48;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<BlobKey> keys;
  for (const std::string& src : sources) {
    int fd = ::open(src.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    auto k = w->putBlobFromFile(fd);
    ::close(fd);
    ASSERT_TRUE(k.isOk()) << k.status().toString();
    keys.push_back(*k);
  }
  Status closed = w->close();
  ::setrlimit(RLIMIT_NOFILE, &old);
  ASSERT_TRUE(closed.isOk()) << closed.toString();
  auto r = mustOpen(dir.file("many.dynrep"));
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(*r->readBlob(keys[i]), testing::readFile(sources[i]));
}

TEST(StoreTest, SecondWriterIsLockedOutAndExistingStoreIsKept) {
  TempDir dir;
  std::string path = dir.file("l.dynrep");
  auto w = mustCreate(path);
  auto second = StoreWriter::create(path, WriterOptions{3, true});
  ASSERT_FALSE(second.isOk());
  EXPECT_EQ(second.status().code(), Status::Code::Locked);
  EXPECT_NE(second.status().message().find(path + ": store is locked by another writer"), std::string::npos);
  ASSERT_TRUE(w->putRecord(16, "kept").isOk());
  ASSERT_TRUE(w->close().isOk());

  auto again = StoreWriter::create(path);
  EXPECT_EQ(again.status().code(), Status::Code::AlreadyExists);
  EXPECT_EQ(*mustOpen(path)->recordPayload(0), "kept");  // nothing was lost
  WriterOptions over;
  over.overwrite = true;
  auto replaced = mustCreate(path, over);
  ASSERT_TRUE(replaced->close().isOk());
  EXPECT_EQ(mustOpen(path)->recordCount(), 0u);
}

TEST(StoreTest, ConcurrentPutsKeepEachBlobWhole) {
  TempDir dir;
  std::string path = dir.file("c.dynrep");
  WriterOptions o;
  o.chunkSize = 4096;
  o.maxPendingBytes = 64 * 1024;  // exercise backpressure
  auto w = mustCreate(path, o);
  std::vector<std::thread> threads;
  std::vector<std::vector<std::pair<BlobKey, std::string>>> puts(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::string d = pattern(1000 + 997 * i, uint32_t(t * 100 + i));
        puts[t].push_back({*w->putBlob(d), d});
        ASSERT_TRUE(w->putRecord(16, std::to_string(t) + ":" + std::to_string(i)).isOk());
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(w->close().isOk());
  auto r = mustOpen(path);
  EXPECT_EQ(r->recordCount(), 100u);
  for (const auto& perThread : puts)
    for (const auto& [k, d] : perThread) EXPECT_EQ(*r->readBlob(k), d);
}

TEST(StoreTest, ReaderSeesFlushedRecordsWhileWriterIsOpen) {
  TempDir dir;
  std::string path = dir.file("p.dynrep");
  auto w = mustCreate(path);
  BlobKey k = *w->putBlob("early");
  ASSERT_TRUE(w->putRecord(16, "one").isOk());
  ASSERT_TRUE(w->flush().isOk());
  auto r = mustOpen(path);
  EXPECT_EQ(r->state(), StoreState::InProgress);
  EXPECT_EQ(r->recordCount(), 1u);
  EXPECT_EQ(*r->readBlob(k), "early");
  ASSERT_TRUE(w->close().isOk());
  EXPECT_EQ(mustOpen(path)->state(), StoreState::Finished);
}

TEST(StoreTest, RejectsBadOptionsAndContainerKinds) {
  TempDir dir;
  WriterOptions o;
  o.level = 99;
  EXPECT_EQ(StoreWriter::create(dir.file("o.dynrep"), o).status().code(), Status::Code::InvalidArgument);
  auto w = mustCreate(dir.file("k.dynrep"));
  EXPECT_EQ(w->putRecord(1, "x").code(), Status::Code::InvalidArgument);
  ASSERT_TRUE(w->close().isOk());
  EXPECT_EQ(w->putRecord(16, "x").code(), Status::Code::InvalidArgument);  // closed
}

TEST(StoreTest, ForkedChildLeavesTheParentsStoreAlone) {
  TempDir dir;
  std::string path = dir.file("fork.dynrep");
  auto w = mustCreate(path);
  ASSERT_TRUE(w->putRecord(16, "before fork").isOk());
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child's copy has no writer thread: a put, a flush or a close must neither hang nor
    // touch the file (capture flushes when compiled code fails, in a DataLoader worker too).
    bool refused = w->putRecord(16, "from the child").code() == Status::Code::InvalidArgument &&
                   w->putBlob("child's bytes").status().code() == Status::Code::InvalidArgument &&
                   w->flush().code() == Status::Code::InvalidArgument &&
                   w->close().code() == Status::Code::InvalidArgument;
    ::_exit(refused ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_TRUE(w->putRecord(16, "after fork").isOk());
  ASSERT_TRUE(w->close().isOk());
  auto r = mustOpen(path);
  EXPECT_EQ(r->state(), StoreState::Finished);
  ASSERT_EQ(r->recordCount(), 2u);
  EXPECT_EQ(*r->recordPayload(1), "after fork");
}

// A child writes records and blobs as fast as it can until the parent kills it. Whatever
// the moment, the store must open, say it is recovered, and hold a sound prefix.
TEST(StoreTest, KilledWriterLeavesARecoverablePrefix) {
  TempDir dir;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 25; ++trial) {
    std::string path = dir.file("kill" + std::to_string(trial) + ".dynrep");
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      WriterOptions o;
      o.chunkSize = 1500;
      auto w = StoreWriter::create(path, o);
      if (!w.isOk()) ::_exit(3);
      for (uint32_t i = 0;; ++i) {
        (void)(*w)->putBlob(pattern(500 + i % 4000, i));
        (void)(*w)->putRecord(16, "record " + std::to_string(i));
        if (i % 8 == 0) (void)(*w)->flush();
      }
    }
    ::usleep(1000 + rng() % 40'000);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited on its own: " << status;

    if (::access(path.c_str(), F_OK) != 0) continue;  // killed (on a busy machine) before it made the file
    auto r = StoreReader::open(path);
    if (!r.isOk()) {
      // Killed before the header was complete: the only acceptable failure, and it must say so.
      EXPECT_EQ(r.status().code(), Status::Code::Corruption) << r.status().toString();
      continue;
    }
    EXPECT_EQ((*r)->state(), StoreState::Recovered);
    EXPECT_FALSE((*r)->recoveryNote().empty());
    for (size_t i = 0; i < (*r)->recordCount(); ++i) EXPECT_EQ(*(*r)->recordPayload(i), "record " + std::to_string(i));
    for (const BlobInfo& b : (*r)->blobs()) EXPECT_TRUE((*r)->readBlob(b.key).isOk()) << b.key.hex();
  }
}

}  // namespace
}  // namespace dynrep
