#include "common/prometheus_text.h"

#include <cctype>
#include <cmath>
#include <sstream>

namespace orb::prom {
namespace {

std::string EscapeLabel(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

std::string EscapeHelp(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string LabelText(const Labels& labels, const std::string& le = "") {
  std::string out;
  for (const auto& [k, v] : labels) out += (out.empty() ? "" : ",") + SanitizeName(k) + "=\"" + EscapeLabel(v) + "\"";
  if (!le.empty()) out += (out.empty() ? "" : ",") + std::string("le=\"") + le + "\"";
  return out.empty() ? "" : "{" + out + "}";
}

const char* TypeName(Type type) {
  switch (type) {
    case Type::kGauge: return "gauge";
    case Type::kCounter: return "counter";
    case Type::kHistogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string SanitizeName(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != ':') c = '_';
  }
  if (!out.empty() && std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> buckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                              0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5, 5, 10};
  return buckets;
}

Series& Exposition::SeriesOf(const std::string& name, const std::string& help, Type type, const Labels& labels) {
  std::string clean = SanitizeName(name);
  Family& family = families_[clean];
  if (family.name.empty()) {
    family.name = clean;
    family.help = help;
    family.type = type;
  }
  Labels all = common_;
  for (const auto& [k, v] : labels) all[k] = v;
  Series& s = family.series[all];
  s.labels = all;
  return s;
}

void Exposition::Gauge(const std::string& name, const std::string& help, double value, const Labels& labels) {
  SeriesOf(name, help, Type::kGauge, labels).value = value;
}

void Exposition::Counter(const std::string& name, const std::string& help, double value, const Labels& labels) {
  SeriesOf(name, help, Type::kCounter, labels).value += value;
}

void Exposition::Histogram(const std::string& name, const std::string& help, const Series& series) {
  Series& s = SeriesOf(name, help, Type::kHistogram, series.labels);
  if (s.bounds.empty() && s.count == 0) {
    s.bounds = series.bounds;
    s.buckets.assign(series.bounds.size() + 1, 0);
  }
  if (s.bounds != series.bounds) return;  // differently bucketed sources cannot be merged
  for (size_t i = 0; i < series.buckets.size() && i < s.buckets.size(); ++i) s.buckets[i] += series.buckets[i];
  s.count += series.count;
  s.value += series.value;
}

std::string Exposition::Text() const {
  std::ostringstream out;
  for (const auto& [name, family] : families_) {
    out << "# HELP " << name << " " << EscapeHelp(family.help) << "\n# TYPE " << name << " " << TypeName(family.type)
        << "\n";
    for (const auto& [labels, s] : family.series) {
      if (family.type != Type::kHistogram) {
        out << name << LabelText(labels) << " " << Number(s.value) << "\n";
        continue;
      }
      uint64_t cumulative = 0;
      for (size_t i = 0; i < s.buckets.size(); ++i) {
        cumulative += s.buckets[i];
        std::string le = i < s.bounds.size() ? Number(s.bounds[i]) : "+Inf";
        out << name << "_bucket" << LabelText(labels, le) << " " << cumulative << "\n";
      }
      out << name << "_sum" << LabelText(labels) << " " << Number(s.value) << "\n";
      out << name << "_count" << LabelText(labels) << " " << s.count << "\n";
    }
  }
  return out.str();
}

}  // namespace orb::prom
