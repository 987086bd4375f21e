// Tests only: a store of trace events (and their payloads) written by one writer and closed
// before it is read, for tests of what is built from events (query, inspect, mlir).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "dynrep/capture/records.h"
#include "dynrep/store/writer.h"

namespace dynrep::testing {

class StoreBuilder {
 public:
  explicit StoreBuilder(const std::string& path) {
    WriterOptions o;
    o.sync = false;
    writer_ = std::move(*StoreWriter::create(path, o));
  }
  void event(std::string_view name, capture::CompileId id, std::string metadata, std::string payload = "") {
    capture::TraceEvent e{std::string(name), id, std::move(metadata), "", 0, 0};
    if (!payload.empty()) {
      e.payloadKey = writer_->putBlob(payload)->hex();
      e.payloadSize = payload.size();
    }
    ASSERT_TRUE(writer_->putRecord(uint16_t(capture::RecordKind::TraceEvent), capture::encode(e)).isOk());
  }
  void close() { ASSERT_TRUE(writer_->close().isOk()); }

 private:
  std::unique_ptr<StoreWriter> writer_;
};

}  // namespace dynrep::testing
