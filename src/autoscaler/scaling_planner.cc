#include "autoscaler/scaling_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"

namespace orb::autoscaler {
namespace {

constexpr int kMinConcurrentLaunches = 5;
const LabelSelector kAnyNode;

// How many of the shapes still waiting a candidate node type is scored against.
constexpr size_t kScoredShapes = 64;

// How many copies of `shape` fit in `avail` (max for an empty shape).
int64_t HowMany(const ResourceSet& avail, const ResourceSet& shape) {
  int64_t n = std::numeric_limits<int64_t>::max();
  shape.ForEachId([&](int id, double need) {
    if (need <= 0) return;
    n = std::min<int64_t>(n, static_cast<int64_t>(std::floor(avail.GetById(id) / need + 1e-9)));
  });
  return n;
}

ResourceSet Times(const ResourceSet& shape, int64_t k) {
  if (k == 1) return shape;
  auto m = shape.ToMap();
  for (auto& [name, amount] : m) amount *= static_cast<double>(k);
  return ResourceSet::FromMap(m);
}

bool NeedsGpu(const ResourceSet& shape) { return shape.Get("GPU") > 0; }

struct Bin {
  std::string key;
  int type = -1;  // index into types; -1 for a node the autoscaler did not launch
  bool managed = false;
  bool launching = false;
  bool is_new = false;
  ResourceSet avail;
  ResourceSet total;
  const std::map<std::string, std::string>* labels = nullptr;  // the node's, or its type's when new
  std::chrono::milliseconds idle_for{0};
  std::string scale_in_reason;
  bool touched = false;  // waiting work or a bundle was packed onto it
  bool keep = false;     // holds requested resources
};

class Planner {
 public:
  explicit Planner(const ScalingInput& in) : in_(in) {}

  ScalingPlan Run() {
    MakeBins();
    ApplyMinimums();
    PackRequested();
    for (const auto& pg : in_.placement_groups) PackPlacementGroup(pg);
    PackQueued();
    FillWarmPools();
    CapLaunches();
    ScaleIn();
    for (const auto& [type, whys] : launch_reasons_) {
      if (!plan_.launch.count(type)) continue;  // capped away this round
      std::string why;
      for (const auto& [what, count] : whys) absl::StrAppend(&why, why.empty() ? "" : "; ", what);
      plan_.launch_reasons[type] = why;
    }
    return std::move(plan_);
  }

 private:
  void MakeBins() {
    for (size_t t = 0; t < in_.types.size(); ++t) type_index_[in_.types[t].name] = static_cast<int>(t);
    for (const auto& node : in_.nodes) {
      Bin b;
      b.key = node.key;
      auto it = type_index_.find(node.node_type);
      b.type = node.node_type.empty() || it == type_index_.end() ? -1 : it->second;
      b.managed = !node.node_type.empty();
      b.launching = node.launching;
      b.total = node.total;
      b.labels = &node.labels;
      b.avail = node.launching ? node.total : node.available;
      b.idle_for = node.idle_for;
      b.scale_in_reason = node.scale_in_reason;
      if (b.managed) {
        managed_++;
        count_[node.node_type]++;
      }
      if (node.launching) launching_++;
      bins_.push_back(std::move(b));
    }
  }

  bool HasQuota(int t) const {
    const auto& type = in_.types[t];
    auto it = count_.find(type.name);
    int have = it == count_.end() ? 0 : it->second;
    return have < type.max_workers && managed_ < in_.max_workers;
  }

  Bin& Launch(int t, const std::string& why) {
    const auto& type = in_.types[t];
    Bin b;
    b.key = absl::StrCat("new-", type.name, "-", new_nodes_);
    b.type = t;
    b.managed = true;
    b.launching = true;
    b.is_new = true;
    b.avail = type.resources;
    b.total = type.resources;
    b.labels = &type.labels;
    new_nodes_++;
    managed_++;
    count_[type.name]++;
    plan_.launch[type.name]++;
    launch_reasons_[type.name][why]++;
    bins_.push_back(std::move(b));
    return bins_.back();
  }

  void ApplyMinimums() {
    for (size_t t = 0; t < in_.types.size(); ++t) {
      while (count_[in_.types[t].name] < in_.types[t].min_workers && managed_ < in_.max_workers) {
        Launch(static_cast<int>(t), in_.types[t].min_reason.empty() ? "min_workers " + std::to_string(in_.types[t].min_workers)
                                                                    : in_.types[t].min_reason);
      }
    }
  }

  // The node type to add for `shape`, or -1 (and why, in `why_not`); `waiting` is the
  // demand still to place, this shape's remaining copies first. Types with GPUs
  // are kept for work that needs GPUs (work that does not may still use what a GPU
  // node has left).
  int ChooseType(const ResourceSet& shape, const LabelSelector& selector, const std::vector<ShapeDemand>& waiting,
                 std::string* why_not) {
    int best = -1;
    std::pair<double, int64_t> best_score{-1, 0};
    bool any_fits = false;
    bool only_gpu_types = false;
    for (size_t t = 0; t < in_.types.size(); ++t) {
      const auto& type = in_.types[t];
      if (!type.resources.Contains(shape) || type.max_workers <= 0 || !selector.Matches(type.labels)) continue;
      // A label selector says where the work goes: then a GPU type it picks is fine.
      if (NeedsGpu(type.resources) && !NeedsGpu(shape) && selector.empty()) {
        only_gpu_types = true;
        continue;
      }
      any_fits = true;
      if (!HasQuota(static_cast<int>(t))) continue;
      auto score = Utilisation(type, waiting);
      bool better = score.first > best_score.first + 1e-9 ||
                    (score.first > best_score.first - 1e-9 && score.second > best_score.second);
      if (best < 0 || better) {
        best = static_cast<int>(t);
        best_score = score;
      }
    }
    if (best < 0) {
      if (any_fits) {
        *why_not = managed_ >= in_.max_workers ? "the cluster is at max_workers " + std::to_string(in_.max_workers)
                                               : "every node type that fits is at its max_workers";
      } else if (only_gpu_types) {
        *why_not = "only node types with GPUs could hold it, and they are kept for work that needs GPUs";
      } else if (PinnedToANode(shape)) {
        *why_not = "it is pinned to one node (a node: resource): it waits for that node, not for a new one";
      } else {
        *why_not = "no node type has " + shape.ToString() +
                   (selector.empty() ? "" : " with labels matching '" + selector.text() + "'");
      }
    }
    return best;
  }

  static bool PinnedToANode(const ResourceSet& shape) {
    for (const auto& [name, amount] : shape.ToMap()) {
      if (IsNodeResource(name)) return true;
    }
    return false;
  }

  // How well a node of `resources` would be used by the waiting shapes: the average
  // use of its resources once they are packed onto it, then how many it takes (so of
  // two types used equally well, the one that needs fewer nodes).
  static std::pair<double, int64_t> Utilisation(const NodeTypeLimits& type, const std::vector<ShapeDemand>& waiting) {
    const ResourceSet& resources = type.resources;
    ResourceSet avail = resources;
    int64_t placed = 0;
    for (size_t i = 0; i < waiting.size() && i < kScoredShapes; ++i) {
      if (!waiting[i].selector.Matches(type.labels)) continue;
      int64_t k = std::min(HowMany(avail, waiting[i].shape), waiting[i].count);
      if (k <= 0) continue;
      avail.Subtract(Times(waiting[i].shape, k));
      placed += k;
    }
    double sum = 0;
    int n = 0;
    resources.ForEachId([&](int id, double total) {
      sum += 1.0 - avail.GetById(id) / total;
      n++;
    });
    return {n ? sum / n : 0, placed};
  }

  void ReportUnplaced(const ResourceSet& shape, int64_t count, const std::string& what, const std::string& why) {
    std::string line = absl::StrCat(count, " x ", shape.ToString(), " (", what, ") cannot be placed: ", why);
    if (why.rfind("no node type", 0) == 0) plan_.infeasible.push_back(line);
    plan_.reasons.push_back(line);
  }

  // First fit of `count` copies of `shape` into the bins; then new nodes. `waiting`
  // (`n_waiting` of them) is what remains after this shape, for choosing node types.
  void Pack(const ResourceSet& shape, const LabelSelector& selector, int64_t count, const ShapeDemand* waiting,
            size_t n_waiting, const std::string& what) {
    for (size_t i = 0; i < bins_.size() && count > 0; ++i) {
      Bin& b = bins_[i];
      if (!selector.empty() && !(b.labels && selector.Matches(*b.labels))) continue;
      int64_t k = std::min(HowMany(b.avail, shape), count);
      if (k <= 0) continue;
      b.avail.Subtract(Times(shape, k));
      b.touched = true;
      count -= k;
    }
    while (count > 0) {
      std::string why;
      std::vector<ShapeDemand> demand = {{shape, count, selector}};
      demand.insert(demand.end(), waiting, waiting + std::min(n_waiting, kScoredShapes));
      int t = ChooseType(shape, selector, demand, &why);
      if (t < 0) return ReportUnplaced(shape, count, what, why);
      Bin& b = Launch(t, what);
      int64_t k = std::min(HowMany(b.avail, shape), count);
      b.avail.Subtract(Times(shape, k));
      b.touched = true;
      count -= k;
    }
  }

  void PackRequested() {
    if (in_.requested.empty()) return;
    std::vector<ResourceSet> bundles = in_.requested;
    std::sort(bundles.begin(), bundles.end(), [](const ResourceSet& a, const ResourceSet& b) { return Size(a) > Size(b); });
    // Against totals: requested resources are a floor on capacity, not on free room.
    std::vector<ResourceSet> room;
    for (const auto& b : bins_) room.push_back(b.total);
    for (const auto& bundle : bundles) {
      bool placed = false;
      for (size_t i = 0; i < room.size() && !placed; ++i) {
        if (!room[i].Contains(bundle)) continue;
        room[i].Subtract(bundle);
        bins_[i].keep = true;
        placed = true;
      }
      if (placed) continue;
      std::string why;
      int t = ChooseType(bundle, kAnyNode, {{bundle, 1}}, &why);
      if (t < 0) {
        ReportUnplaced(bundle, 1, "requested resources", why);
        continue;
      }
      Bin& b = Launch(t, "requested resources");
      b.keep = true;
      room.push_back(b.total);
      room.back().Subtract(bundle);
    }
  }

  void PackPlacementGroup(const PlacementGroupDemand& pg) {
    std::string what = "placement group " + pg.name;
    switch (pg.strategy) {
      case BundleStrategy::kStrictPack: {
        ResourceSet all;
        for (const auto& b : pg.bundles) all.Add(b);
        return Pack(all, kAnyNode, 1, nullptr, 0, what + " (STRICT_PACK)");
      }
      case BundleStrategy::kStrictSpread: {
        std::set<size_t> used;  // one bundle per node
        for (const auto& bundle : pg.bundles) {
          bool placed = false;
          for (size_t i = 0; i < bins_.size() && !placed; ++i) {
            if (used.count(i) || !bins_[i].avail.Contains(bundle)) continue;
            bins_[i].avail.Subtract(bundle);
            bins_[i].touched = true;
            used.insert(i);
            placed = true;
          }
          if (placed) continue;
          std::string why;
          int t = ChooseType(bundle, kAnyNode, {{bundle, 1}}, &why);
          if (t < 0) {
            ReportUnplaced(bundle, 1, what + " (STRICT_SPREAD)", why);
            continue;
          }
          Bin& b = Launch(t, what + " (STRICT_SPREAD)");
          b.avail.Subtract(bundle);
          b.touched = true;
          used.insert(bins_.size() - 1);
        }
        return;
      }
      case BundleStrategy::kPack:
      case BundleStrategy::kSpread:
        for (const auto& bundle : pg.bundles) Pack(bundle, kAnyNode, 1, nullptr, 0, what);
        return;
    }
  }

  static double Size(const ResourceSet& s) {
    double sum = 0;
    // GPUs first, then CPUs; memory (bytes) would swamp any sum, so it only breaks ties.
    sum += s.Get("GPU") * 1e6 + s.Get("CPU") * 1e3;
    s.ForEachId([&](int, double v) { sum += std::min(v, 1.0) * 1e-3; });
    return sum;
  }

  void PackQueued() {
    // Equal shapes are packed together (lease requests of one task shape arrive from
    // many nodes).
    std::map<std::pair<std::vector<std::pair<int, double>>, std::string>, size_t> index;
    std::vector<ShapeDemand> queued;
    for (const auto& d : in_.queued) {
      if (d.count <= 0 || d.shape.IsEmpty()) continue;
      std::pair<std::vector<std::pair<int, double>>, std::string> key;
      d.shape.ForEachId([&](int id, double amount) { key.first.emplace_back(id, amount); });
      key.second = d.selector.text();
      auto [it, fresh] = index.emplace(std::move(key), queued.size());
      if (fresh) {
        queued.push_back(d);
      } else {
        queued[it->second].count += d.count;
      }
    }
    std::stable_sort(queued.begin(), queued.end(),
                     [](const ShapeDemand& a, const ShapeDemand& b) { return Size(a.shape) > Size(b.shape); });
    for (size_t i = 0; i < queued.size(); ++i) {
      const ShapeDemand& d = queued[i];
      Pack(d.shape, d.selector, d.count, queued.data() + i + 1, queued.size() - i - 1,
           "queued " + d.shape.ToString() + (d.selector.empty() ? "" : " on '" + d.selector.text() + "'"));
    }
  }

  // Nodes of type `t` that could take work at once: joined and idle, or launching,
  // with nothing packed onto them this round.
  int FreeNodesOf(int t) const {
    int n = 0;
    for (const auto& b : bins_) {
      if (b.type != t || !b.managed || b.touched || b.keep) continue;
      n += b.launching || b.is_new || b.idle_for.count() > 0;
    }
    return n;
  }

  void FillWarmPools() {
    for (size_t t = 0; t < in_.types.size(); ++t) {
      const auto& type = in_.types[t];
      if (type.warm_pool <= 0) continue;
      for (int free = FreeNodesOf(static_cast<int>(t)); free < type.warm_pool && HasQuota(static_cast<int>(t)); ++free) {
        Launch(static_cast<int>(t), "warm_pool " + std::to_string(type.warm_pool));
      }
    }
  }

  void CapLaunches() {
    int live = 0;
    for (const auto& b : bins_) live += b.is_new || b.launching ? 0 : 1;
    int allowed = std::max(kMinConcurrentLaunches,
                           static_cast<int>(std::ceil(in_.upscaling_speed * std::max(1, live)))) - launching_;
    allowed = std::max(0, allowed);
    int planned = 0;
    for (const auto& [type, n] : plan_.launch) planned += n;
    if (planned <= allowed) return;
    // Keep the launches in the order they were decided (min_workers and requests first).
    std::map<std::string, int> kept;
    int left = allowed;
    for (const auto& b : bins_) {
      if (!b.is_new || left == 0) continue;
      kept[in_.types[b.type].name]++;
      left--;
    }
    plan_.reasons.push_back(absl::StrCat("upscaling_speed ", in_.upscaling_speed, " allows ", allowed,
                                         " more launches now (", launching_, " pending); ", planned - allowed,
                                         " wait for the next round"));
    plan_.launch = std::move(kept);
  }

  void ScaleIn() {
    std::vector<const Bin*> idle;
    for (const auto& b : bins_) {
      if (!b.managed || b.launching || b.is_new || b.touched || b.keep) continue;
      if (b.idle_for < in_.idle_timeout || b.idle_for.count() <= 0) continue;
      idle.push_back(&b);
    }
    std::sort(idle.begin(), idle.end(), [](const Bin* a, const Bin* b) { return a->idle_for > b->idle_for; });
    std::map<int, int> free;  // per type: nodes that could take work now
    for (const Bin* b : idle) {
      const auto& type = in_.types[b->type];
      if (count_[type.name] <= type.min_workers) continue;
      // The longest idle go first; the warm pool keeps the rest.
      auto spare = free.try_emplace(b->type, FreeNodesOf(b->type)).first;
      if (type.warm_pool > 0 && spare->second <= type.warm_pool) continue;
      spare->second--;
      count_[type.name]--;
      plan_.terminate.push_back(b->key);
      plan_.reasons.push_back(absl::StrCat("terminate ", b->key, " (", type.name, "): ",
                                           b->scale_in_reason.empty()
                                               ? absl::StrCat("idle for ", b->idle_for.count() / 1000, " s (idle_timeout ",
                                                              in_.idle_timeout.count() / 1000, " s)")
                                               : b->scale_in_reason));
    }
  }

  const ScalingInput& in_;
  ScalingPlan plan_;
  std::vector<Bin> bins_;
  std::map<std::string, int> type_index_;
  std::map<std::string, int> count_;  // managed nodes per type, new ones included
  std::map<std::string, std::map<std::string, int>> launch_reasons_;  // type → why → nodes
  int managed_ = 0;
  int launching_ = 0;
  int new_nodes_ = 0;
};

}  // namespace

bool IsPlacementGroupResource(const std::string& name) { return name.find("_group_") != std::string::npos; }

ScalingPlan PlanScaling(const ScalingInput& input) { return Planner(input).Run(); }

}  // namespace orb::autoscaler
