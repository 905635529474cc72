#include "common/metric_samples.h"

namespace orb {

void ToSamples(const prom::Exposition& families, google::protobuf::RepeatedPtrField<rpc::MetricSample>* out) {
  for (const auto& [name, family] : families.families()) {
    for (const auto& [labels, series] : family.series) {
      rpc::MetricSample* sample = out->Add();
      sample->set_name(name);
      sample->set_description(family.help);
      sample->set_kind(family.type == prom::Type::kGauge     ? rpc::MetricSample::GAUGE
                       : family.type == prom::Type::kCounter ? rpc::MetricSample::COUNTER
                                                             : rpc::MetricSample::HISTOGRAM);
      sample->mutable_tags()->insert(labels.begin(), labels.end());
      sample->set_value(series.value);
      sample->set_count(series.count);
      sample->mutable_boundaries()->Add(series.bounds.begin(), series.bounds.end());
      sample->mutable_bucket_counts()->Add(series.buckets.begin(), series.buckets.end());
    }
  }
}

void AddSample(const rpc::MetricSample& sample, const prom::Labels& gauge_labels, prom::Exposition* out) {
  prom::Labels labels(sample.tags().begin(), sample.tags().end());
  switch (sample.kind()) {
    case rpc::MetricSample::COUNTER:
      out->Counter(sample.name(), sample.description(), sample.value(), labels);
      return;
    case rpc::MetricSample::HISTOGRAM: {
      prom::Series series;
      series.labels = std::move(labels);
      series.value = sample.value();
      series.count = sample.count();
      series.bounds.assign(sample.boundaries().begin(), sample.boundaries().end());
      series.buckets.assign(sample.bucket_counts().begin(), sample.bucket_counts().end());
      if (series.buckets.size() != series.bounds.size() + 1) return;  // malformed: not merged
      out->Histogram(sample.name(), sample.description(), series);
      return;
    }
    default:  // GAUGE, SUM (a total that may go down: exported as a gauge)
      for (const auto& [k, v] : gauge_labels) labels[k] = v;
      out->Gauge(sample.name(), sample.description(), sample.value(), labels);
      return;
  }
}

}  // namespace orb
