// A whole program in the style of Ray's C++ examples, renamed: a key-value service of
// two named actors (a main server and its backup) in a SPREAD placement group with CPU
// and memory resources. The main server is killed; it restarts, sees in its
// constructor that it was restarted, and recovers its data from the backup.
// Prints "kv failover ok" and exits 0 when the data survived.
#include <orb/api.h>

#include <iostream>
#include <optional>
#include <thread>
#include <unordered_map>

const std::string kMainServer = "main_server";
const std::string kBackupServer = "backup_server";
// Each server needs one CPU and 256 MiB of memory.
const std::unordered_map<std::string, double> kResources{{"CPU", 1.0}, {"memory", 256.0 * 1024 * 1024}};

class BackupServer {
 public:
  BackupServer() { ORBLOG(INFO) << "BackupServer created"; }
  static BackupServer* Create() { return new BackupServer(); }
  std::unordered_map<std::string, std::string> GetAllData() { return data_; }
  void BackupData(const std::string& key, const std::string& value) { data_[key] = value; }

 private:
  std::unordered_map<std::string, std::string> data_;
};

class MainServer {
 public:
  MainServer() {
    backup_ = *orb::GetActor<BackupServer>(kBackupServer);
    if (orb::WasCurrentActorRestarted()) {
      // Failover: what the backup holds is what this server held.
      data_ = *backup_.Task(&BackupServer::GetAllData).Remote().Get();
      ORBLOG(INFO) << "MainServer recovered " << data_.size() << " entries from BackupServer";
    }
  }
  static MainServer* Create() { return new MainServer(); }
  void Put(const std::string& key, const std::string& value) {
    std::vector<orb::ObjectRef<void>> backed_up{backup_.Task(&BackupServer::BackupData).Remote(key, value)};
    if (orb::Wait(backed_up, 1, 5000).ready.empty()) ORBLOG(WARNING) << "backing up " << key << " timed out";
    data_[key] = value;
  }
  std::pair<bool, std::string> Get(const std::string& key) {
    auto it = data_.find(key);
    return it == data_.end() ? std::make_pair(false, std::string()) : std::make_pair(true, it->second);
  }

 private:
  std::unordered_map<std::string, std::string> data_;
  orb::ActorHandle<BackupServer> backup_;
};

ORB_REMOTE(MainServer::Create, &MainServer::Put, &MainServer::Get);
ORB_REMOTE(BackupServer::Create, &BackupServer::GetAllData, &BackupServer::BackupData);

// Retries a call while the main server restarts.
template <class F>
auto Retry(F f) -> decltype(f()) {
  for (int attempt = 0;; ++attempt) {
    try {
      return f();
    } catch (const orb::internal::OrbException& e) {
      if (attempt == 30) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
}

int main(int argc, char** argv) {
  orb::Init(argc, argv);
  std::vector<std::unordered_map<std::string, double>> bundles{kResources, kResources};
  auto group = orb::CreatePlacementGroup({"kv_server_group", bundles, orb::PlacementStrategy::SPREAD});
  if (!group.Wait(30)) {
    std::cerr << "the placement group was not placed" << std::endl;
    return 1;
  }
  orb::Actor(BackupServer::Create)
      .SetName(kBackupServer)
      .SetResources(kResources)
      .SetPlacementGroup(group, 1)
      .SetMaxRestarts(-1)
      .Remote();
  orb::Actor(MainServer::Create)
      .SetName(kMainServer)
      .SetResources(kResources)
      .SetPlacementGroup(group, 0)
      .SetMaxRestarts(-1)
      .Remote();
  std::optional<orb::ActorHandle<MainServer>> main_server = orb::GetActor<MainServer>(kMainServer);
  if (!main_server) return 1;
  main_server->Task(&MainServer::Put).Remote("hello", "orb").Get(30000);
  main_server->Task(&MainServer::Put).Remote("answer", "42").Get(30000);
  main_server->Kill(/*no_restart=*/false);
  auto hello = Retry([&] { return *main_server->Task(&MainServer::Get).Remote("hello").Get(10000); });
  auto answer = Retry([&] { return *main_server->Task(&MainServer::Get).Remote("answer").Get(10000); });
  bool ok = hello.first && hello.second == "orb" && answer.first && answer.second == "42";
  std::cout << (ok ? "kv failover ok" : "kv failover FAILED: data lost") << std::endl;
  orb::RemovePlacementGroup(group.GetID());
  orb::Shutdown();
  return ok ? 0 : 1;
}
