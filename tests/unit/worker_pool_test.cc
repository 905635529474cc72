// WorkerPool's idle timeout: a worker idle too long is asked to exit, is not handed out
// while asked, stays idle when it refuses (it owns objects in use), and is stopped when
// it cannot answer. The workers are real processes (a script that sleeps), the asking
// a fake.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <signal.h>
#include <thread>

#include "raylet/worker_pool.h"
#include "wait_for.h"

using namespace orb;

namespace {

struct AskedToExit {
  WorkerID id;
  WorkerPoolOptions::ExitAnswer answer;
};

// A pool whose one worker has registered and gone idle; `asked` collects the requests
// to exit, answered by the test.
struct IdlePool {
  std::vector<AskedToExit> asked;
  std::vector<WorkerID> dead;
  std::string dir;
  JobID job = JobID::FromRandom();
  std::unique_ptr<WorkerPool> pool;
  WorkerID worker;
  pid_t pid = 0;

  IdlePool() {
    char dir_template[] = "/tmp/orb-worker-pool-XXXXXX";
    dir = ::mkdtemp(dir_template);
    std::string script = dir + "/worker.sh";
    std::ofstream(script) << "#!/bin/sh\nexec sleep 60\n";
    ::chmod(script.c_str(), 0755);
    WorkerPoolOptions options;
    options.idle_timeout = std::chrono::milliseconds(1);
    options.ask_to_exit = [this](const WorkerProcess& w, WorkerPoolOptions::ExitAnswer answer) {
      asked.push_back({w.id, std::move(answer)});
    };
    pool = std::make_unique<WorkerPool>(options, [this](const WorkerProcess& w) { dead.push_back(w.id); });
    rpc::JobInfo info;
    info.set_job_id(job.Binary());
    info.set_worker_executable(script);
    REQUIRE(pool->StartWorker(info).ok());
    worker = pool->All().at(0).id;
    pid = pool->All().at(0).pid;
    rpc::RegisterWorkerRequest hello;
    hello.set_worker_id(worker.Binary());
    hello.set_port(1);
    REQUIRE(pool->Register(hello).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the idle timeout
  }
  ~IdlePool() {
    pool->KillAll();
    std::system(("rm -rf " + dir).c_str());
  }
  bool Reaped() {
    pool->ReapDead();
    return !dead.empty();
  }
};

}  // namespace

TEST_CASE("an idle worker is asked to exit once, and not handed out while asked", "[worker_pool]") {
  IdlePool p;
  p.pool->StopIdleWorkers();
  REQUIRE(p.asked.size() == 1);
  CHECK(p.asked[0].id == p.worker);
  CHECK(p.pool->PopIdle(p.job) == nullptr);
  p.pool->StopIdleWorkers();
  CHECK(p.asked.size() == 1);  // no second request while the first is out
}

TEST_CASE("a worker that refuses stays idle and is asked again after another timeout", "[worker_pool]") {
  IdlePool p;
  p.pool->StopIdleWorkers();
  REQUIRE(p.asked.size() == 1);
  p.asked[0].answer(false);  // it owns objects still in use
  CHECK(::kill(p.pid, 0) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  p.pool->StopIdleWorkers();
  REQUIRE(p.asked.size() == 2);
  p.asked[1].answer(false);
  WorkerProcess* leased = p.pool->PopIdle(p.job);
  REQUIRE(leased != nullptr);  // still a worker to lease
  CHECK(leased->id == p.worker);
}

TEST_CASE("a worker that agrees is never handed out again and exits by itself", "[worker_pool]") {
  IdlePool p;
  p.pool->StopIdleWorkers();
  REQUIRE(p.asked.size() == 1);
  p.asked[0].answer(true);
  CHECK(p.pool->PopIdle(p.job) == nullptr);
  CHECK(::kill(p.pid, 0) == 0);  // the pool sends no signal: the worker ends itself
  ::kill(p.pid, SIGTERM);         // as the worker would
  REQUIRE(testing::WaitFor([&] { return p.Reaped(); }, std::chrono::seconds(10)));
  CHECK(p.dead == std::vector<WorkerID>{p.worker});
}

TEST_CASE("a worker that cannot be asked is stopped", "[worker_pool]") {
  IdlePool p;
  p.pool->StopIdleWorkers();
  REQUIRE(p.asked.size() == 1);
  p.asked[0].answer(absl::UnavailableError("connection refused"));
  REQUIRE(testing::WaitFor([&] { return p.Reaped(); }, std::chrono::seconds(10)));
  CHECK(p.pool->PopIdle(p.job) == nullptr);
}

TEST_CASE("a worker that died while asked is forgotten when the answer comes", "[worker_pool]") {
  IdlePool p;
  p.pool->StopIdleWorkers();
  REQUIRE(p.asked.size() == 1);
  ::kill(p.pid, SIGKILL);
  REQUIRE(testing::WaitFor([&] { return p.Reaped(); }, std::chrono::seconds(10)));
  p.asked[0].answer(absl::UnavailableError("connection reset"));  // no worker: nothing to do
  CHECK(p.pool->All().empty());
}
