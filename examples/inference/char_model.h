// A tiny character-level recurrent language model with fixed, seeded weights, decoded
// greedily one token per step for a whole batch. Its cost behaves as a real decoder's:
// each step streams every weight once for the batch and multiplies it with the batch in
// lanes of kLanes sequences, so a step costs the same for 1 to kLanes sequences and grows
// by lanes after that (as a GPU's does once the batch passes what it computes at once).
// The arithmetic of each sequence is the same whatever else is in its batch, and so is
// its text.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace inference {

inline const std::string& Vocabulary() {
  static const std::string v = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,";
  return v;
}

class CharModel {
 public:
  static constexpr int kHidden = 1024;
  static constexpr int kVocab = 64;
  static constexpr size_t kLanes = 8;

  struct Sequence {
    std::vector<float> h = std::vector<float>(kHidden, 0.0f);
    std::string prompt;
    size_t read = 0;     // prompt characters read so far
    int next = 0;        // the last token generated
    int max_tokens = 0;  // tokens to generate
    std::string text;    // generated so far
    bool done() const { return static_cast<int>(text.size()) >= max_tokens; }
  };

  explicit CharModel(uint64_t seed) : w_(kHidden * kHidden), embed_(kVocab * kHidden), out_(kVocab * kHidden) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    auto uniform = [&s](float scale) {
      s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
      return scale * (2.0f * static_cast<float>((s * 0x2545F4914F6CDD1Dull) >> 40) / static_cast<float>(1 << 24) - 1.0f);
    };
    for (float& w : w_) w = uniform(1.6f / std::sqrt(static_cast<float>(kHidden)));
    for (float& w : embed_) w = uniform(1.0f);
    for (float& w : out_) w = uniform(1.0f / std::sqrt(static_cast<float>(kHidden)));
  }

  // One step for every unfinished sequence in `batch`: one still reading its prompt reads
  // its next character (prefill, a character a step, beside the others' decoding); one that
  // has read it all generates a character.
  void Step(const std::vector<Sequence*>& batch) const {
    std::vector<Sequence*> live, emitting;
    std::vector<int> feed;
    for (Sequence* s : batch) {
      if (s->done()) continue;
      live.push_back(s);
      if (s->read < s->prompt.size()) {
        size_t id = Vocabulary().find(s->prompt[s->read++]);
        feed.push_back(id == std::string::npos ? 0 : static_cast<int>(id));
      } else {
        feed.push_back(s->next);
      }
      if (s->read == s->prompt.size()) emitting.push_back(s);
    }
    if (live.empty()) return;
    Advance(live, feed);
    if (emitting.empty()) return;
    // logits = out · h, then the most likely character (greedy).
    size_t b = Padded(emitting.size());
    std::vector<float> logits(kVocab * b, 0.0f);
    std::vector<float> x = Gather(emitting, b);
    Multiply(out_.data(), kVocab, x.data(), b, logits.data());
    for (size_t s = 0; s < emitting.size(); ++s) {
      int best = 0;
      for (int v = 1; v < kVocab; ++v) {
        if (logits[v * b + s] > logits[best * b + s]) best = v;
      }
      emitting[s]->next = best;
      emitting[s]->text += Vocabulary()[best];
    }
  }

 private:
  static size_t Padded(size_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

  // The sequences' hidden states, feature-major, `b` lanes (the padding zero).
  static std::vector<float> Gather(const std::vector<Sequence*>& batch, size_t b) {
    std::vector<float> x(static_cast<size_t>(kHidden) * b, 0.0f);
    for (size_t s = 0; s < batch.size(); ++s) {
      for (int j = 0; j < kHidden; ++j) x[j * b + s] = batch[s]->h[j];
    }
    return x;
  }

  // y[i][s] += Σj w[i][j] · x[j][s] for `rows` rows, in lanes of kLanes sequences.
  static void Multiply(const float* w, int rows, const float* x, size_t b, float* y) {
    for (int i = 0; i < rows; ++i) {
      const float* row = w + static_cast<size_t>(i) * kHidden;
      for (size_t lane = 0; lane < b; lane += kLanes) {
        float acc[kLanes] = {};
        for (int j = 0; j < kHidden; ++j) {
          const float* xj = x + j * b + lane;
          for (size_t k = 0; k < kLanes; ++k) acc[k] += row[j] * xj[k];
        }
        for (size_t k = 0; k < kLanes; ++k) y[i * b + lane + k] += acc[k];
      }
    }
  }

  // h = tanh(W · h + embed[feed]) for every sequence of `batch`, W streamed once.
  void Advance(const std::vector<Sequence*>& batch, const std::vector<int>& feed) const {
    size_t b = Padded(batch.size());
    std::vector<float> x = Gather(batch, b), y(static_cast<size_t>(kHidden) * b, 0.0f);
    Multiply(w_.data(), kHidden, x.data(), b, y.data());
    for (size_t s = 0; s < batch.size(); ++s) {
      const float* e = &embed_[static_cast<size_t>(feed[s]) * kHidden];
      for (int i = 0; i < kHidden; ++i) batch[s]->h[i] = std::tanh(y[i * b + s] + e[i]);
    }
  }

  std::vector<float> w_, embed_, out_;
};

}  // namespace inference
