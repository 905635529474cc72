#include "gcs/task_event_store.h"

#include "common/state_filter.h"
#include "common/state_rows.h"

namespace orb::gcs {
namespace {

bool IsTerminal(rpc::TaskState state) { return state == rpc::FINISHED || state == rpc::FAILED; }

}  // namespace

void TaskEventStore::Merge(const rpc::TaskEvent& e, rpc::TaskInfo* info) {
  if (info->task_id().empty()) {
    info->set_task_id(e.task_id());
    info->set_attempt(e.attempt());
  }
  if (!e.job_id().empty()) info->set_job_id(e.job_id());
  if (!e.name().empty()) info->set_name(e.name());
  if (!e.type().empty()) info->set_type(e.type());
  if (!e.node_id().empty()) info->set_node_id(e.node_id());
  if (!e.worker_id().empty()) info->set_worker_id(e.worker_id());
  if (e.worker_pid() != 0) info->set_worker_pid(e.worker_pid());
  if (!e.actor_id().empty()) info->set_actor_id(e.actor_id());
  if (e.has_error()) *info->mutable_error() = e.error();
  if (!e.required_resources().empty()) *info->mutable_required_resources() = e.required_resources();
  if (e.language() != rpc::CPP) info->set_language(e.language());
  if (e.end_time_ns() != 0) info->set_end_time_ns(e.end_time_ns());
  if (e.state() == rpc::TASK_STATE_NIL) return;
  (*info->mutable_state_times_ns())[rpc::TaskState_Name(e.state())] = e.time_ns();
  // Events of one attempt arrive from two processes in any order: the state only moves
  // forward, and a terminal state stays.
  bool was_terminal = IsTerminal(info->state());
  if (!was_terminal && e.state() > info->state()) {
    info->set_state(e.state());
    if (e.state() == rpc::FINISHED) ++finished_total_;
    if (e.state() == rpc::FAILED) ++failed_total_;
  }
}

void TaskEventStore::Add(const rpc::AddTaskEventsRequest& request) {
  dropped_ += request.dropped();
  for (const rpc::TaskEvent& e : request.events()) {
    if (e.task_id().empty()) continue;
    Key key{e.task_id(), e.attempt()};
    auto it = tasks_.find(key);
    if (it == tasks_.end()) {
      order_.push_back(key);
      it = tasks_.emplace(key, Entry{rpc::TaskInfo(), std::prev(order_.end())}).first;
    }
    Merge(e, &it->second.info);
  }
  Evict();
  for (const auto& t : request.transfers()) {
    transfers_.push_back(t);
    if (transfers_.size() > max_transfers_) transfers_.pop_front();
  }
}

void TaskEventStore::Evict() {
  if (tasks_.size() <= max_tasks_) return;
  // The oldest finished attempts go first; running ones only when nothing else is left.
  for (auto it = order_.begin(); it != order_.end() && tasks_.size() > max_tasks_;) {
    auto entry = tasks_.find(*it);
    if (!IsTerminal(entry->second.info.state())) {
      ++it;
      continue;
    }
    tasks_.erase(entry);
    it = order_.erase(it);
    ++dropped_;
  }
  while (tasks_.size() > max_tasks_) {
    tasks_.erase(order_.front());
    order_.pop_front();
    ++dropped_;
  }
}

absl::StatusOr<rpc::ListTasksReply> TaskEventStore::List(const rpc::ListTasksRequest& request) const {
  std::vector<std::string> texts(request.filters().begin(), request.filters().end());
  auto filters = ParseStateFilters(texts);
  if (!filters.ok()) return filters.status();
  if (auto s = CheckFilterKeys(*filters, TaskColumns()); !s.ok()) return s;
  rpc::ListTasksReply reply;
  int64_t matched = 0;
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    const rpc::TaskInfo& info = tasks_.at(*it).info;
    if (!request.job_id().empty() && info.job_id() != request.job_id()) continue;
    if (!filters->empty() && !MatchesStateFilters(TaskRow(info), *filters)) continue;
    ++matched;
    if (request.limit() > 0 && reply.tasks_size() >= request.limit()) continue;
    *reply.add_tasks() = info;
  }
  reply.set_total(matched);
  reply.set_dropped_events(dropped_);
  if (request.include_transfers()) {
    for (const auto& t : transfers_) *reply.add_transfers() = t;
  }
  return reply;
}

void TaskEventStore::AppendMetrics(prom::Exposition* out) const {
  std::map<rpc::TaskState, int64_t> by_state;
  for (int s = rpc::PENDING_NODE_ASSIGNMENT; s <= rpc::FAILED; ++s) by_state[static_cast<rpc::TaskState>(s)] = 0;
  for (const auto& [key, entry] : tasks_) ++by_state[entry.info.state()];
  for (const auto& [state, n] : by_state) {
    out->Gauge("orb_tasks", "task attempts the GCS remembers, by their latest state", n,
               {{"state", rpc::TaskState_Name(state)}});
  }
  out->Counter("orb_tasks_finished_total", "task attempts that finished (as their owners reported)", finished_total_);
  out->Counter("orb_tasks_failed_total", "task attempts that failed (as their owners reported)", failed_total_);
  out->Counter("orb_task_events_dropped_total", "task events lost: senders' full buffers and the GCS's history bound",
               dropped_);
}

}  // namespace orb::gcs
