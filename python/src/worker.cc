// A Python worker: the raylet starts `python -m orb._worker`, which calls
// run_worker(executor). The C++ core worker then serves tasks as in a C++ worker; the
// functions, actor factories and methods it is asked for by name are made on demand
// (FunctionResolver) and run Python code through `executor`, holding the GIL only
// while Python runs.
#include "worker.h"

#include <pybind11/stl.h>
#include <pthread.h>

#include <atomic>
#include <mutex>
#include <csignal>

#include "orb/config.h"
#include "orb/errors.h"
#include "orb/internal/deferred_call.h"
#include "orb/internal/function_registry.h"
#include "orb/internal/runtime.h"
#include "py_refs.h"

namespace py = pybind11;

namespace orb::python {
namespace {

using Args = std::vector<std::shared_ptr<internal::ValueBuffer>>;

// Values up to this size are copied into Python bytes (an inline argument's memory
// lasts only as long as its task); larger ones, which come from the object store, are
// read in place and stay pinned while Python references them.
constexpr size_t kCopyArgumentsUpTo = 100 * 1024;

py::list ToPython(const Args& args) {
  py::list out;
  for (const auto& a : args) {
    if (a->size() <= kCopyArgumentsUpTo) {
      out.append(py::bytes(a->data(), a->size()));
    } else {
      out.append(py::cast(PyValue{a}));
    }
  }
  return out;
}

// orb.cancel of the task running on the main thread: SIGINT wakes it from a blocking
// call, and the worker's SIGINT handler (orb._worker) raises KeyboardInterrupt only
// while `interrupt_wanted` is set. A signal is sent only while Python code of a task
// runs there (`in_python_task`), and what is left of one when that code ends is
// dropped, both under `interrupt_mu`: no interrupt outlives its task into the next.
std::mutex interrupt_mu;
bool in_python_task = false;  // guarded by interrupt_mu
std::atomic<bool> interrupt_wanted{false};
pthread_t main_thread;  // set by RunWorker, which runs on it
std::atomic<bool> serves_tasks{false};  // set by RunWorker

bool OnMainThread() { return ::pthread_equal(::pthread_self(), main_thread); }

// Brackets a task's Python code on the main thread (the GIL held).
class PythonTaskScope {
 public:
  PythonTaskScope() : main_(OnMainThread()) {
    if (!main_) return;
    std::lock_guard<std::mutex> lock(interrupt_mu);
    in_python_task = true;
  }
  ~PythonTaskScope() {
    if (!main_) return;
    bool late;
    {
      std::lock_guard<std::mutex> lock(interrupt_mu);
      in_python_task = false;
      late = interrupt_wanted.exchange(false);
    }
    // The handler now finds nothing wanted: a signal still pending interrupts nothing.
    if (late && PyErr_CheckSignals() != 0) PyErr_Clear();
  }

 private:
  bool main_;
};

// Interrupts the main thread's task, if Python code of one runs there.
bool InterruptMainThreadTask(pthread_t thread) {
  std::lock_guard<std::mutex> lock(interrupt_mu);
  if (!in_python_task || !::pthread_equal(thread, main_thread)) return false;
  interrupt_wanted = true;
  return ::pthread_kill(thread, SIGINT) == 0;
}

py::object& ActorExitType() {
  static py::object* type = nullptr;  // never freed: the process _Exits
  if (!type) {
    type = new py::object(py::reinterpret_steal<py::object>(
        PyErr_NewExceptionWithDoc("orb._core.ActorExit", "raised by orb.actor.exit_actor() to end the actor",
                                  PyExc_BaseException, nullptr)));
  }
  return *type;
}

// A Python exception as Python prints it: the traceback, then the type and message.
std::string FormatPythonError(py::error_already_set& e) {
  try {
    py::object lines = py::module_::import("traceback").attr("format_exception")(e.type(), e.value(), e.trace());
    return py::str("").attr("join")(lines).cast<std::string>();
  } catch (const std::exception&) {
    return e.what();
  }
}

// Runs `call` with the GIL. The executor catches the user's exceptions and returns
// them as values; what escapes it is orb's own failure, turned into orb::Error here,
// where the GIL is held (or ActorExitSignal for orb.actor.exit_actor()). The task
// receiver prefixes the message with the function's name.
template <class F>
auto WithPython(F&& call) {
  py::gil_scoped_acquire gil;
  PythonTaskScope task_scope;
  try {
    return call();
  } catch (py::error_already_set& e) {
    if (e.matches(ActorExitType())) throw internal::ActorExitSignal{};
    throw Error(FormatPythonError(e));
  } catch (const py::cast_error& e) {
    throw Error(e.what());
  }
}

// A task's or method's result: a serialized value; the ObjectRefs pickled in it go to
// this thread's record, for the worker to hand to the caller.
std::string ResultBytes(const py::object& result) {
  std::string out(result.attr("size").cast<size_t>(), '\0');
  py::memoryview view = py::memoryview::from_memory(out.data(), static_cast<py::ssize_t>(out.size()));
  result.attr("write")(view);
  view.attr("release")();
  result.attr("refs").cast<std::shared_ptr<HeldRefs>>()->Record();
  return out;
}

// What the executor returned for a task with `internal::CurrentTaskNumReturns()` returns:
// one value, or a list of them (num_returns > 1), whose first is the function's result
// and the rest go to SetMoreReturns, each with the ObjectRefs pickled in it.
std::string ReturnedBytes(const py::object& returned) {
  if (!py::isinstance<py::list>(returned)) return ResultBytes(returned);
  py::list values = returned.cast<py::list>();
  std::vector<internal::ReturnData> more;
  internal::ClearSerializedRefs();
  for (size_t i = 1; i < values.size(); ++i) {
    std::string bytes = ResultBytes(values[i]);
    more.push_back(internal::ReturnData{std::move(bytes), internal::TakeSerializedRefs()});
  }
  internal::SetMoreReturns(std::move(more));
  return ResultBytes(values[0]);
}

// The num_returns the executor is told: -1 for a streaming generator.
int ReturnsAsked() { return internal::CurrentTaskStreams() ? -1 : internal::CurrentTaskNumReturns(); }

struct PyInstance {
  py::object instance;
  ~PyInstance() {
    py::gil_scoped_acquire gil;
    instance = py::object();
  }
};

void RunWorker(const py::object& executor) {
  main_thread = ::pthread_self();
  serves_tasks = true;
  auto ex = std::make_shared<py::object>(executor);  // lives until the process exits
  internal::FunctionResolver resolver;
  resolver.function = [ex](const std::string& name) -> internal::Invoker {
    return [ex, name](const Args& args) {
      int num_returns = ReturnsAsked();
      return WithPython([&] { return ReturnedBytes(ex->attr("run_task")(name, ToPython(args), num_returns)); });
    };
  };
  resolver.factory = [ex](const std::string& name) -> internal::ActorFactory {
    return [ex, name](const Args& args) {
      return WithPython([&] {
        auto instance = std::make_shared<PyInstance>();
        instance->instance = ex->attr("create_actor")(name, ToPython(args));
        return std::shared_ptr<void>(instance, instance.get());
      });
    };
  };
  resolver.method = [ex](const std::string& name) -> internal::ActorMethod {
    return [ex, name](void* self, const Args& args) {
      int num_returns = ReturnsAsked();
      return WithPython([&] {
        const py::object& instance = static_cast<PyInstance*>(self)->instance;
        py::object returned = ex->attr("call_method")(instance, name, ToPython(args), num_returns);
        // None: the executor deferred the call (an async method), its completion answers.
        return returned.is_none() ? std::string() : ReturnedBytes(returned);
      });
    };
  };
  resolver.interrupt = [ex](uint64_t thread, bool actor_call) -> bool {
    if (actor_call) {
      // Only an async call stops mid-way: its coroutine is cancelled.
      py::gil_scoped_acquire gil;
      return ex->attr("cancel_async_call")(thread).cast<bool>();
    }
    return InterruptMainThreadTask(static_cast<pthread_t>(thread));
  };
  internal::FunctionRegistry::Instance().SetResolver(std::move(resolver));
  py::gil_scoped_release release;
  // With ORB_WORKER_MODE=1 (set by the raylet), Init serves tasks and never returns.
  internal::Init(Config(), 0, nullptr);
}

}  // namespace

bool IsWorkerProcess() { return serves_tasks; }

void DefineWorker(py::module_& m) {
  m.attr("ActorExit") = ActorExitType();
  m.def("run_worker", &RunWorker, "serves this worker's tasks with `executor`; never returns");
  m.def(
      "report_generator_item",
      [](const py::object& value) {
        internal::ClearSerializedRefs();
        std::string bytes = ResultBytes(value);
        internal::ReturnData item{std::move(bytes), internal::TakeSerializedRefs()};
        py::gil_scoped_release release;
        return internal::ReportGeneratorItem(std::move(item));
      },
      "hands the running streaming task's next item (serialized) to its caller; true when nobody reads the "
      "stream any more");
  m.def(
      "retry_exceptions",
      []() -> py::object {
        std::string allowlist;
        if (!internal::CurrentTaskRetriesErrors(&allowlist)) return py::none();
        return py::bytes(allowlist);
      },
      "None when the running task does not retry the errors it raises; else its pickled allowlist (b'': any)");
  m.def("mark_retryable_error", &internal::MarkRetryableError,
        "the running task raised an error it is retried for (retry_exceptions)");
  py::class_<internal::DeferredCall, std::shared_ptr<internal::DeferredCall>>(
      m, "DeferredCall", "an actor call taken over by defer_call(), answered by one of its methods from any thread")
      .def_property_readonly("token", &internal::DeferredCall::token, "what a cancel of the call is sent to")
      .def(
          "complete",
          [](internal::DeferredCall& call, const py::object& value) {
            internal::ClearSerializedRefs();
            std::string bytes = ResultBytes(value);
            std::vector<internal::RefData> refs = internal::TakeSerializedRefs();
            py::gil_scoped_release release;
            call.Complete(std::move(bytes), std::move(refs));
          },
          "answers the call with `value` (serialized: size, write, refs)")
      .def(
          "exit_actor",
          [](internal::DeferredCall& call) {
            py::gil_scoped_release release;
            call.CompleteWithActorExit();
          },
          "the call ended the actor on purpose (exit_actor())")
      .def(
          "fail",
          [](internal::DeferredCall& call, const std::string& message) {
            py::gil_scoped_release release;
            call.Fail(message);
          },
          "the call failed outside the user's code, or was cancelled");
  m.def(
      "defer_call",
      []() -> py::object {
        std::shared_ptr<internal::DeferredCall> call;
        {
          py::gil_scoped_release release;  // a cancel holds the receiver's lock, then takes the GIL
          call = internal::DeferCurrentCall();
        }
        if (!call) return py::none();
        return py::cast(call);
      },
      "takes over the running actor call (a DeferredCall) when it may finish later; None when it may not");
  m.def("take_interrupt", [] { return interrupt_wanted.exchange(false); },
        "whether a cancel asked to interrupt the running task (and forget that it did)");
}

}  // namespace orb::python
