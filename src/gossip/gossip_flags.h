// The gossip knobs as command-line flags, shared by gcs_server and raylet so that both
// spell them the same way. Defaults are GossipOptions'.
#pragma once

#include <CLI/CLI.hpp>

#include "gossip/gossip_node.h"

namespace orb::gossip {

struct GossipFlagValues {
  int round_ms, fanout, gcs_every, probe_interval_ms, probe_timeout_ms, indirect_probes, suspicion_ms;
};

inline void AddGossipFlags(CLI::App& app, GossipFlagValues* v) {
  GossipOptions d;
  *v = {static_cast<int>(d.round_interval.count()), d.fanout, d.seed_every_rounds,
        static_cast<int>(d.probe_interval.count()), static_cast<int>(d.probe_timeout.count()), d.indirect_probes,
        static_cast<int>(d.suspicion_timeout.count())};
  app.add_option("--gossip-round-ms", v->round_ms, "gossip round interval")->check(CLI::Range(1, 60000));
  app.add_option("--gossip-fanout", v->fanout, "random peers per gossip round")->check(CLI::Range(0, 64));
  app.add_option("--gossip-gcs-every", v->gcs_every,
                 "exchange with the GCS every this many rounds (0: about 100 members per round reach the GCS)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--probe-interval-ms", v->probe_interval_ms, "failure-detector probe interval")
      ->check(CLI::Range(1, 600000));
  app.add_option("--probe-timeout-ms", v->probe_timeout_ms, "wait this long for a direct probe's ack")
      ->check(CLI::Range(1, 600000));
  app.add_option("--indirect-probes", v->indirect_probes, "members asked to probe an unanswering node")
      ->check(CLI::Range(0, 16));
  app.add_option("--suspicion-timeout-ms", v->suspicion_ms,
                 "GCS only: declare a suspected node dead after this long without a refutation")
      ->check(CLI::Range(1, 3600000));
}

inline GossipOptions ToGossipOptions(const GossipFlagValues& v) {
  GossipOptions o;
  o.round_interval = std::chrono::milliseconds(v.round_ms);
  o.fanout = v.fanout;
  o.seed_every_rounds = v.gcs_every;
  o.probe_interval = std::chrono::milliseconds(v.probe_interval_ms);
  o.probe_timeout = std::chrono::milliseconds(v.probe_timeout_ms);
  o.indirect_probes = v.indirect_probes;
  o.suspicion_timeout = std::chrono::milliseconds(v.suspicion_ms);
  return o;
}

}  // namespace orb::gossip
