// The chaos suite's workload: work with sequence numbers on a running cluster while
// tests/chaos/chaos_test.sh injects one kind of fault, then one JSON line of what came
// back:
//
//   {"fault":"...","submitted":N,"completed":N,"lost":N,"duplicated":N,"wrong":N,...}
//
// Every item has a sequence number and a known right answer: tasks with retries (spread
// over the nodes), calls to an actor with restarts and task retries, objects made on one
// node and read on another, and tasks in a placement group. An item is *completed* when
// its answer is right, *wrong* when an answer came back that is not, *lost* when it
// ended in an error the program did not expect (or never ended). *duplicated* counts
// runs beyond the first (at-least-once: retried work may run twice). A pipeline whose
// object went with a killed node is resubmitted (orb does not rebuild lost objects yet)
// and counted as *resubmitted*. With --poison, tasks that abort their worker are mixed
// in; they are expected to fail (poison_failed) and must not take healthy work with them.
// With --hold-puts, each round also Puts 4 MiB objects that are held to the end (the
// driver's store and its spill disk fill up): a Put refused with ObjectStoreFullError or
// OutOfDiskError was never acknowledged (put_refused), a read that hears those errors
// while there is no room is transient (transient); at the end the newest half are read
// and dropped, and every other acknowledged one must read back right once there is room.
// Under that fault an item that fails for want of store or disk space is refused, not lost.
//
//   chaos_workload --orb-address=HOST:PORT --fault=NAME --seconds=S --run-dir=DIR
//                  [--poison] [--hold-puts] [--started-file=PATH]
//   chaos_workload --orb-address=HOST:PORT --probe-named-actor
//       creates a named actor (a GCS write) and calls it; exit 0 when that worked, else
//       the error on stderr and exit 1
#include <orb/api.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string run_dir;  // where runs are logged (shared by every node of this machine)

// Appends "kind seq" to the run log: how often each item ran.
void LogRun(const std::string& kind, int64_t seq) {
  std::string line = kind + " " + std::to_string(seq) + "\n";
  std::string path = std::string(std::getenv("CHAOS_RUN_DIR") ? std::getenv("CHAOS_RUN_DIR") : run_dir) + "/runs.log";
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  (void)!::write(fd, line.data(), line.size());  // one write with O_APPEND: lines never interleave
  ::close(fd);
}

}  // namespace

int64_t Square(int64_t seq) {
  LogRun("task", seq);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  return seq * seq;
}

int64_t Poison(int64_t seq) {
  LogRun("poison", seq);
  std::abort();
  return seq;
}

// 256 KiB, word i = seq * 7 + i: big enough to live in the object store.
std::vector<int64_t> Produce(int64_t seq) {
  LogRun("object", seq);
  std::vector<int64_t> v(32 * 1024);
  for (size_t i = 0; i < v.size(); ++i) v[i] = seq * 7 + static_cast<int64_t>(i);
  return v;
}

int64_t Checksum(std::vector<int64_t> v) {
  int64_t sum = 0;
  for (int64_t x : v) sum += x;
  return sum;
}

int64_t ExpectedChecksum(int64_t seq) {
  int64_t n = 32 * 1024;
  return seq * 7 * n + n * (n - 1) / 2;
}

class Recorder {
 public:
  static Recorder* Create() { return new Recorder(); }
  int64_t Echo(int64_t seq) {
    LogRun("actor", seq);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return seq;
  }
  int Pid() { return static_cast<int>(::getpid()); }
};

ORB_REMOTE(Square, Poison, Produce, Checksum, Recorder::Create, &Recorder::Echo, &Recorder::Pid);

namespace {

std::string Flag(int argc, char** argv, const std::string& name, const std::string& fallback = "") {
  std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) return argv[i] + prefix.size();
    if (argv[i] == "--" + name) return "1";
  }
  return fallback;
}

// An error that says the store or its spill disk had no room: nothing acknowledged was lost.
bool NoRoom(const std::string& what) {
  return what.find("out of disk") != std::string::npos || what.find("object store full") != std::string::npos ||
         what.find("no room") != std::string::npos;
}

struct Tally {
  int64_t submitted = 0, completed = 0, lost = 0, wrong = 0, resubmitted = 0, poison_failed = 0;
  int64_t refused = 0, put_refused = 0, transient = 0;
  bool no_room_is_refusal = false;  // the full spill disk run
  std::map<std::string, int64_t> lost_by_kind;
  std::set<std::string> reasons;  // distinct causes of losses, for the report

  void Lose(const std::string& kind, const std::string& why) {
    if (no_room_is_refusal && NoRoom(why)) {
      ++refused;
      return;
    }
    ++lost;
    ++lost_by_kind[kind];
    if (reasons.size() < 5) reasons.insert(kind + ": " + why.substr(0, 200));
  }
};

template <class T>
bool Settle(orb::ObjectRef<T>& ref, T expected, const std::string& kind, Tally& tally, int64_t timeout_ms) {
  try {
    auto value = ref.Get(timeout_ms);
    if (*value == expected) {
      ++tally.completed;
    } else {
      ++tally.wrong;
    }
  } catch (const orb::ObjectLostError& e) {
    if (kind == "object") return false;  // the caller resubmits
    tally.Lose(kind, e.what());
  } catch (const orb::Error& e) {
    tally.Lose(kind, e.what());
  }
  return true;
}

std::string Json(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string fault = Flag(argc, argv, "fault", "none");
  int seconds = std::stoi(Flag(argc, argv, "seconds", "20"));
  run_dir = Flag(argc, argv, "run-dir", "/tmp");
  bool poison = Flag(argc, argv, "poison") == "1";
  std::string started_file = Flag(argc, argv, "started-file");
  bool hold_puts = Flag(argc, argv, "hold-puts") == "1";

  if (Flag(argc, argv, "probe-named-actor") == "1") {
    try {
      orb::Init(orb::Config(), argc, argv);
      auto named = orb::Actor(Recorder::Create).SetName("probe-" + std::to_string(getpid())).Remote();
      named.Task(&Recorder::Pid).Remote().Get(60000);
      named.Kill();
      orb::Shutdown();
      return 0;
    } catch (const orb::Error& e) {
      std::cerr << e.what() << "\n";
      return 1;
    }
  }

  orb::Config config;
  orb::RuntimeEnv env;
  env.Set("env_vars", std::map<std::string, std::string>{{"CHAOS_RUN_DIR", run_dir}});
  config.runtime_env = env;
  orb::Init(config, argc, argv);

  // Long-lived parts: an actor that comes back and retries its calls, and a group of
  // two bundles, spread over the nodes.
  auto recorder = orb::Actor(Recorder::Create).SetMaxRestarts(-1).SetMaxTaskRetries(-1).Remote();
  orb::PlacementGroup group =
      orb::CreatePlacementGroup({"", {{{"CPU", 0.25}}, {{"CPU", 0.25}}}, orb::PlacementStrategy::SPREAD});
  Tally tally;
  tally.no_room_is_refusal = hold_puts;
  using Held = std::vector<int64_t>;  // 4 MiB, word i = seq + i
  constexpr size_t kHeldWords = 512 * 1024;
  auto held_right = [&](const Held& v, int64_t s) {
    return v.size() == kHeldWords && v[0] == s && v[kHeldWords - 1] == s + static_cast<int64_t>(kHeldWords) - 1;
  };
  std::vector<std::pair<int64_t, orb::ObjectRef<Held>>> held;
  // Reads one held object: true when it settled (right, wrong or lost), false on a
  // transient error. A right answer counts as completed only when `final`.
  auto read_held = [&](size_t i, bool final) {
    try {
      auto v = held[i].second.Get(60000);
      if (!held_right(*v, held[i].first)) {
        ++tally.wrong;
      } else if (final) {
        ++tally.completed;
      }
      return true;
    } catch (const orb::ObjectStoreFullError&) {
    } catch (const orb::OutOfDiskError&) {
    } catch (const orb::Error& e) {
      ++tally.lost;
      ++tally.lost_by_kind["held_object"];
      if (tally.reasons.size() < 5) tally.reasons.insert(std::string("held_object: ") + e.what());
      return true;
    }
    ++tally.transient;
    return false;
  };
  if (!group.Wait(60)) tally.Lose("placement_group", "not placed within 60 s");
  recorder.Task(&Recorder::Pid).Remote().Get(60000);
  if (!started_file.empty()) std::ofstream(started_file) << "started\n";

  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int64_t seq = 0;
  while (std::chrono::steady_clock::now() < until) {
    std::vector<std::pair<int64_t, orb::ObjectRef<int64_t>>> tasks, calls, grouped, pipelines;
    std::vector<orb::ObjectRef<int64_t>> poisoned;
    for (int i = 0; i < 12; ++i, ++seq) {
      tasks.emplace_back(seq, orb::Task(Square).SetMaxRetries(10).SetSchedulingStrategy(orb::SpreadSchedulingStrategy{})
                                  .Remote(seq));
    }
    for (int i = 0; i < 6; ++i, ++seq) calls.emplace_back(seq, recorder.Task(&Recorder::Echo).Remote(seq));
    for (int i = 0; i < 3; ++i, ++seq) {
      auto made = orb::Task(Produce).SetMaxRetries(10).SetSchedulingStrategy(orb::SpreadSchedulingStrategy{}).Remote(seq);
      pipelines.emplace_back(
          seq, orb::Task(Checksum).SetMaxRetries(10).SetSchedulingStrategy(orb::SpreadSchedulingStrategy{}).Remote(made));
    }
    if (group.GetState() != orb::PlacementGroupState::REMOVED) {
      for (int i = 0; i < 4; ++i, ++seq) {
        grouped.emplace_back(seq, orb::Task(Square).SetMaxRetries(10).SetPlacementGroup(group, i % 2)
                                      .SetResource("CPU", 0.25).Remote(seq));
      }
    }
    if (poison) {
      for (int i = 0; i < 2; ++i) poisoned.push_back(orb::Task(Poison).SetMaxRetries(1).Remote(-1 - i));
    }
    tally.submitted += tasks.size() + calls.size() + grouped.size() + pipelines.size();
    if (hold_puts) {
      for (int i = 0; i < 8; ++i, ++seq) {
        Held v(kHeldWords);
        for (size_t w = 0; w < v.size(); ++w) v[w] = seq + static_cast<int64_t>(w);
        try {
          held.emplace_back(seq, orb::Put(v));
        } catch (const orb::ObjectStoreFullError&) {
          ++tally.put_refused;
        } catch (const orb::OutOfDiskError&) {
          ++tally.put_refused;
        }
      }
      // One held object read now, the oldest first (on disk by then); settled ones again at the end.
      if (!held.empty()) read_held(static_cast<size_t>(seq) % held.size(), /*final=*/false);
    }

    const int64_t timeout_ms = 90000;
    for (auto& [s, ref] : tasks) Settle(ref, s * s, "task", tally, timeout_ms);
    for (auto& [s, ref] : calls) Settle(ref, s, "actor", tally, timeout_ms);
    for (auto& [s, ref] : grouped) Settle(ref, s * s, "placement_group", tally, timeout_ms);
    for (auto& [s, ref] : pipelines) {
      bool settled = Settle(ref, ExpectedChecksum(s), "object", tally, timeout_ms);
      // The object went with its node: made again (as an application would), at most twice.
      for (int again = 0; !settled && again < 2; ++again) {
        ++tally.resubmitted;
        auto made = orb::Task(Produce).SetMaxRetries(10).Remote(s);
        auto sum = orb::Task(Checksum).SetMaxRetries(10).Remote(made);
        settled = Settle(sum, ExpectedChecksum(s), "object", tally, timeout_ms);
      }
      if (!settled) tally.Lose("object", "lost three times");
    }
    ++tally.submitted;
    try {  // where the actor runs now, for the fault injector
      int pid = *recorder.Task(&Recorder::Pid).Remote().Get(timeout_ms);
      std::ofstream(run_dir + "/actor.pid.tmp") << pid << "\n";
      std::rename((run_dir + "/actor.pid.tmp").c_str(), (run_dir + "/actor.pid").c_str());
      ++tally.completed;
    } catch (const orb::Error& e) {
      tally.Lose("actor", std::string("Pid: ") + e.what());
    }
    for (auto& ref : poisoned) {
      try {
        ref.Get(timeout_ms);
        tally.Lose("poison", "a task that aborts its worker returned");
      } catch (const orb::WorkerCrashedError&) {
        ++tally.poison_failed;
      } catch (const orb::Error& e) {
        tally.Lose("poison", std::string("failed otherwise: ") + e.what());
      }
    }
  }

  if (hold_puts) {
    // Every acknowledged object reads back right, newest first, each dropped once read:
    // the newest is in memory, and each one dropped leaves room to read an older one back
    // from disk. Transient errors are waited out, for a minute in all.
    tally.submitted += static_cast<int64_t>(held.size());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (size_t i = held.size(); i-- > 0;) {
      bool settled = read_held(i, /*final=*/true);
      while (!settled && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        settled = read_held(i, /*final=*/true);
      }
      if (!settled) {
        ++tally.lost;
        ++tally.lost_by_kind["held_object"];
        tally.reasons.insert("held_object: still no room to read it back after a minute");
      }
      held[i].second = orb::ObjectRef<Held>();
    }
  }

  // Runs per item, from the log the workers appended to.
  std::map<std::string, int64_t> runs;
  {
    std::ifstream log(run_dir + "/runs.log");
    std::string kind;
    int64_t s;
    while (log >> kind >> s) runs[kind + " " + std::to_string(s)]++;
  }
  int64_t duplicated = 0;
  for (const auto& [item, n] : runs) {
    if (item.rfind("poison", 0) != 0 && n > 1) duplicated += n - 1;
  }
  std::ostringstream out;
  out << "{\"fault\":\"" << Json(fault) << "\",\"submitted\":" << tally.submitted << ",\"completed\":" << tally.completed
      << ",\"lost\":" << tally.lost << ",\"duplicated\":" << duplicated << ",\"wrong\":" << tally.wrong
      << ",\"resubmitted\":" << tally.resubmitted << ",\"poison_failed\":" << tally.poison_failed
      << ",\"refused\":" << tally.refused << ",\"put_refused\":" << tally.put_refused
      << ",\"transient\":" << tally.transient;
  if (!tally.reasons.empty()) {
    out << ",\"loss_reasons\":[";
    bool first = true;
    for (const auto& r : tally.reasons) {
      out << (first ? "" : ",") << "\"" << Json(r) << "\"";
      first = false;
    }
    out << "]";
  }
  out << "}";
  std::cout << out.str() << std::endl;
  orb::Shutdown();
  return tally.lost == 0 && tally.wrong == 0 ? 0 : 1;
}
