#include "specbench/draft_tree.hpp"

#include <cmath>
#include <queue>
#include <stdexcept>
#include <vector>

namespace specbench {
namespace {

// A frontier entry of the best-first search: a candidate node not yet in the tree.
struct Candidate {
  float score;
  int depth;                 // 1-based depth of the candidate
  std::vector<int32_t> path; // ranks r1..rd
  int32_t parent;            // node index of the parent in the tree
};

// True when a is better than b under (score desc, depth asc, rank path lexicographic asc).
bool better(const Candidate& a, const Candidate& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.depth != b.depth) return a.depth < b.depth;
  return a.path < b.path;
}

struct Worse {
  bool operator()(const Candidate& a, const Candidate& b) const { return better(b, a); }
};

void link_children(DraftTree& t) {
  const int n = t.size();
  t.first_child.assign(n, -1);
  t.next_sibling.assign(n, -1);
  std::vector<int32_t> last_child(n, -1);
  for (int i = 1; i < n; ++i) {
    const int p = t.parents[i];
    if (last_child[p] < 0) t.first_child[p] = i;
    else t.next_sibling[last_child[p]] = i;
    last_child[p] = i;
  }
}

void add_root(DraftTree& t, int32_t root_token) {
  t.parents = {-1};
  t.tokens = {root_token};
  t.depths = {0};
  t.scores = {0.0f};
  t.ranks = {-1};
}

} // namespace

DraftTree build_ddtree_reference(std::span<const float> top_logp, std::span<const int32_t> top_ids,
                                 int depth, int k, int budget, int32_t root_token) {
  if (depth < 0 || k < 0 || budget < 0 ||
      top_logp.size() < static_cast<size_t>(depth) * static_cast<size_t>(k) ||
      top_ids.size() < static_cast<size_t>(depth) * static_cast<size_t>(k))
    throw std::invalid_argument("build_ddtree_reference: inputs smaller than [depth, k]");
  DraftTree t;
  add_root(t, root_token);
  std::priority_queue<Candidate, std::vector<Candidate>, Worse> heap;
  auto logp = [&](int d, int r) { return top_logp[static_cast<size_t>(d - 1) * k + r]; };
  if (depth > 0 && k > 0) heap.push({logp(1, 0), 1, {0}, 0});
  while (!heap.empty() && t.size() <= budget) {
    Candidate c = heap.top();
    heap.pop();
    if (std::isnan(c.score) || c.score == -INFINITY) break; // nothing reachable is left
    const int node = t.size();
    const int r = c.path.back();
    t.parents.push_back(c.parent);
    t.tokens.push_back(top_ids[static_cast<size_t>(c.depth - 1) * k + r]);
    t.depths.push_back(c.depth);
    t.scores.push_back(c.score);
    t.ranks.push_back(r);
    if (r + 1 < k) { // next sibling: same parent, next rank at this depth
      Candidate s = c;
      s.path.back() = r + 1;
      s.score = c.score - logp(c.depth, r) + logp(c.depth, r + 1);
      heap.push(std::move(s));
    }
    if (c.depth < depth) { // first child: one deeper, rank 0
      Candidate ch{c.score + logp(c.depth + 1, 0), c.depth + 1, c.path, node};
      ch.path.push_back(0);
      heap.push(std::move(ch));
    }
  }
  link_children(t);
  return t;
}

DraftTree chain_as_tree(std::span<const int32_t> drafts, int32_t root_token) {
  DraftTree t;
  add_root(t, root_token);
  for (size_t i = 0; i < drafts.size(); ++i) {
    t.parents.push_back(static_cast<int32_t>(i));
    t.tokens.push_back(drafts[i]);
    t.depths.push_back(static_cast<int32_t>(i + 1));
    t.scores.push_back(0.0f);
    t.ranks.push_back(0);
  }
  link_children(t);
  return t;
}

std::vector<uint8_t> ancestor_mask(const DraftTree& tree) {
  const int n = tree.size();
  std::vector<uint8_t> mask(static_cast<size_t>(n) * n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = i; j >= 0; j = tree.parents[j]) mask[static_cast<size_t>(i) * n + j] = 1;
  return mask;
}

Acceptance verify_tree_reference(const DraftTree& tree, std::span<const int32_t> target_tokens) {
  if (target_tokens.size() < static_cast<size_t>(tree.size()))
    throw std::invalid_argument("verify_tree_reference: target_tokens smaller than the tree");
  Acceptance a;
  a.path.push_back(0);
  int cur = 0;
  for (;;) {
    const int32_t want = target_tokens[cur];
    int next = -1;
    for (int c = tree.first_child[cur]; c >= 0; c = tree.next_sibling[c])
      if (tree.tokens[c] == want) {
        next = c;
        break;
      }
    if (next < 0) break;
    a.path.push_back(next);
    cur = next;
  }
  a.bonus_token = target_tokens[cur];
  return a;
}

Acceptance verify_chain_reference(std::span<const int32_t> drafts,
                                  std::span<const int32_t> target_tokens) {
  if (target_tokens.size() < drafts.size() + 1)
    throw std::invalid_argument("verify_chain_reference: target_tokens needs K+1 entries");
  Acceptance a;
  a.path.push_back(0);
  size_t i = 0;
  while (i < drafts.size() && drafts[i] == target_tokens[i]) {
    ++i;
    a.path.push_back(static_cast<int32_t>(i));
  }
  a.bonus_token = target_tokens[i];
  return a;
}

} // namespace specbench
