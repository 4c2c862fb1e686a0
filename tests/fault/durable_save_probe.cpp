// Drives RecordStore::save() under the tg_fsync_eio shim, to prove that a
// failed fsync comes back as EIO (so the run loop withholds the forced
// kill, DESIGN.md [authority]) and that lazy saves, which do not fsync, work.
//   durable_save_probe DIR        (TG_FAULT_FSYNC_EIO=1)
//   durable_save_probe DIR dir    (TG_FAULT_FSYNC_EIO=dir)
// Exit 0 when: the lazy save succeeds; the durable save fails with EIO and
// leaves no temporary file behind, and the lazily saved record intact. With
// `dir` only the directory's fsync fails: the record was renamed into place
// (it is the new one) but it is not durable, and the save still says EIO.
#include "record_store.hpp"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>

using namespace treeguard;

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 3 && std::string(argv[2]) == "dir")) {
    std::fprintf(stderr, "usage: durable_save_probe DIR [dir]\n");
    return 2;
  }
  const bool only_directory = argc == 3;
  const std::filesystem::path dir = argv[1];
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const RecordStore store(dir);

  RunRecord record;
  record.run_id = "20240101T000000-1-0000";
  record.boot_id = "0f3c1b2a-9d8e-4c7b-a6f5-e4d3c2b1a098";
  record.controller = {1, 1};
  record.boundary = {BoundaryKind::process_group, "pgid 7", 7L};
  record.command = {"true"};
  record.cwd = "/";
  if (auto lazy = store.save(record, Durability::lazy); !lazy) {
    std::fprintf(stderr, "durable_save_probe: lazy save failed: %s\n",
                 lazy.error().message().c_str());
    return 1;
  }
  RunRecord authority = record;
  authority.authority.push_back({1, "SIGKILL", {"pid 8 (start 9)"}, "deadline", "controller"});
  auto durable = store.save(authority, Durability::durable);
  if (durable || durable.error().code != std::errc::io_error) {
    std::fprintf(stderr, "durable_save_probe: durable save: %s, expected EIO\n",
                 durable ? "succeeded" : durable.error().message().c_str());
    return 1;
  }
  auto kept = store.load(record.run_id);
  if (!kept || *kept != (only_directory ? authority : record)) {
    std::fprintf(stderr, "durable_save_probe: the record on disk is not the %s one\n",
                 only_directory ? "renamed" : "earlier");
    return 1;
  }
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++entries;
  }
  if (entries != 1) {
    std::fprintf(stderr, "durable_save_probe: %d files left, expected 1\n", entries);
    return 1;
  }
  std::printf("durable_save_probe: %s\n", durable.error().message().c_str());
  std::filesystem::remove_all(dir);
  return 0;
}
