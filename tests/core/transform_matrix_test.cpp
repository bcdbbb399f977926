// The composition matrix: every test program (one per primitive, plus
// combinations) under every sequence of one, two and three transforms.
// Every IR a sequence produces must validate, and satisfy the properties
// that tie the transforms together, checked by running it:
//   dce / cse / sched(X)(in)          == X(in)
//   pushforward(X)((x, t))[0]          == X(x)
//   pullback(X)((x, X(x)))[0]          == X(x)
//   batch(X)(items stacked leafwise)  == X(item) for each item, stacked
// Explicit values for the transforms of each primitive are in
// transform_test.cpp; this suite checks that any composition is a working
// program.
#include <gtest/gtest.h>

#include "transform_test_util.h"

namespace af::testing {
namespace {

// Leaves of v at the leaf positions of def (a leaf position takes the whole
// value found there: a batched leaf is a list).
void leaves_at(const Value& v, const std::vector<TreeDef::Node>& nodes, size_t& pos, std::vector<Value>& out) {
  const TreeDef::Node& n = nodes[pos++];
  switch (n.type) {
    case TreeDef::NodeType::Leaf: out.push_back(v); return;
    case TreeDef::NodeType::Null: return;
    case TreeDef::NodeType::List:
      for (uint32_t c = 0; c < n.n_children; ++c) leaves_at(v.items()[c], nodes, pos, out);
      return;
    case TreeDef::NodeType::Dict:
      for (uint32_t c = 0; c < n.n_children; ++c) leaves_at(*v.find(n.keys[c]), nodes, pos, out);
      return;
  }
}

std::vector<Value> leaves_of(const Value& v, const TreeDef& def) {
  std::vector<Value> out;
  size_t pos = 0;
  leaves_at(v, def.nodes(), pos, out);
  return out;
}

// The two outputs stacked leafwise: every output leaf becomes [a, b].
Value stack(const Value& a, const Value& b, const TreeDef& def) {
  std::vector<Value> la = leaves_of(a, def), lb = leaves_of(b, def), st;
  for (size_t i = 0; i < la.size(); ++i) st.push_back(Value::list({la[i], lb[i]}));
  return def.unflatten(st);
}

struct Sample {
  std::vector<Value> a, b;
};

// Inputs of the transformed IR derived from inputs of the IR it came from.
Sample for_pushforward(const Sample& s) {
  Value pa = Value::list(s.a), pb = Value::list(s.b);
  return Sample{{pa, pb}, {pb, pa}};
}

// Feedback on an output: the output itself, with every leaf that is not a
// str written as text (feedback is text whatever the output's kind).
Value as_feedback(const Value& v) {
  switch (v.kind()) {
    case Kind::List: {
      std::vector<Value> items;
      for (const Value& item : v.items()) items.push_back(as_feedback(item));
      return Value::list(std::move(items));
    }
    case Kind::Dict: {
      std::vector<Entry> entries;
      for (const auto& [k, item] : v.entries()) entries.emplace_back(k, as_feedback(item));
      return Value::dict(std::move(entries));
    }
    case Kind::Null:
    case Kind::Str: return v;
    default: return Value::str(to_json(v));
  }
}

Sample for_pullback(const IRPtr& x, const Sample& s) {
  return Sample{{Value::list(s.a), as_feedback(run(x, s.a))}, {Value::list(s.b), as_feedback(run(x, s.b))}};
}

Sample for_batch(const IRPtr& x, const Sample& s) {
  Sample out;
  const auto trees = x->in_tree.children();
  size_t leaf = 0;
  for (size_t i = 0; i < trees.size(); ++i) {
    std::vector<Value> la = leaves_of(s.a[i], trees[i]), lb = leaves_of(s.b[i], trees[i]), sa, sb;
    for (size_t k = 0; k < la.size(); ++k, ++leaf) {
      bool is_static = !x->in[leaf].is_var();
      sa.push_back(is_static ? la[k] : Value::list({la[k], lb[k]}));
      sb.push_back(is_static ? lb[k] : Value::list({lb[k], la[k]}));
    }
    out.a.push_back(trees[i].unflatten(sa));
    out.b.push_back(trees[i].unflatten(sb));
  }
  return out;
}

enum class T { Batch, Push, Pull, Dce, Cse, Sched };
const char* name_of(T t) {
  switch (t) {
    case T::Batch: return "batch";
    case T::Push: return "pushforward";
    case T::Pull: return "pullback";
    case T::Dce: return "dce";
    case T::Cse: return "cse";
    case T::Sched: return "sched";
  }
  return "?";
}

IRPtr apply(T t, const IRPtr& x, Sample& s) {
  switch (t) {
    case T::Batch: s = for_batch(x, s); return batch(x, Value());
    case T::Push: s = for_pushforward(s); return pushforward(*x);
    case T::Pull: s = for_pullback(x, s); return pullback(*x);
    case T::Dce: return dce(*x, Value());
    case T::Cse: return cse(*x);
    case T::Sched: return sched(*x);
  }
  return x;
}

// Checks the properties of every transform applied once more to x.
void check_properties(const IRPtr& x, const Sample& s, const std::string& where) {
  SCOPED_TRACE(where);
  ASSERT_NO_THROW(validate(*x)) << to_text(*x);
  Value oa = run(x, s.a), ob = run(x, s.b);
  EXPECT_EQ(to_json(run(dce(*x, Value()), s.a)), to_json(oa)) << "dce";
  EXPECT_EQ(to_json(run(cse(*x), s.a)), to_json(oa)) << "cse";
  EXPECT_EQ(to_json(run(sched(*x), s.a)), to_json(oa)) << "sched";
  Sample sp = for_pushforward(s);
  IRPtr pf = pushforward(*x);
  ASSERT_NO_THROW(validate(*pf));
  EXPECT_EQ(to_json(run(pf, sp.a).items()[0]), to_json(oa)) << "pushforward primal";
  Sample sb = for_pullback(x, s);
  IRPtr pb = pullback(*x);
  ASSERT_NO_THROW(validate(*pb));
  EXPECT_EQ(to_json(run(pb, sb.a).items()[0]), to_json(oa)) << "pullback primal";
  Sample sv = for_batch(x, s);
  IRPtr bt = batch(x, Value());
  ASSERT_NO_THROW(validate(*bt));
  EXPECT_EQ(to_json(run(bt, sv.a)), to_json(stack(oa, ob, x->out_tree))) << "batch";
}

std::vector<std::vector<T>> sequences() {
  const T all[] = {T::Batch, T::Push, T::Pull, T::Dce, T::Cse, T::Sched};
  std::vector<std::vector<T>> seqs{{}};
  for (T a : all) seqs.push_back({a});
  for (T a : all)
    for (T b : all) seqs.push_back({a, b});
  // Triples: the compositions the transforms are most likely to get wrong.
  const std::vector<std::vector<T>> triples = {
      {T::Push, T::Push, T::Push}, {T::Pull, T::Pull, T::Pull}, {T::Batch, T::Batch, T::Batch},
      {T::Batch, T::Pull, T::Push}, {T::Pull, T::Batch, T::Pull}, {T::Push, T::Pull, T::Batch},
      {T::Pull, T::Push, T::Batch}, {T::Batch, T::Push, T::Pull}, {T::Sched, T::Dce, T::Pull},
      {T::Cse, T::Pull, T::Batch}, {T::Dce, T::Batch, T::Pull}, {T::Batch, T::Batch, T::Pull},
  };
  seqs.insert(seqs.end(), triples.begin(), triples.end());
  return seqs;
}

class TransformMatrix : public ::testing::TestWithParam<std::string> {};

TEST_P(TransformMatrix, EverySequenceIsAWorkingProgram) {
  for (const Program& p : programs()) {
    if (p.name != GetParam()) continue;
    for (const auto& seq : sequences()) {
      IRPtr x = p.ir;
      Sample s{p.a, p.b};
      std::string where = p.name;
      for (T t : seq) {
        where = std::string(name_of(t)) + "(" + where + ")";
        x = apply(t, x, s);
      }
      try {
        check_properties(x, s, where);
      } catch (const Error& e) {
        ADD_FAILURE() << where << ": " << e.what();
      }
    }
  }
}

std::vector<std::string> program_names() {
  std::vector<std::string> names;
  for (const Program& p : programs()) names.push_back(p.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Programs, TransformMatrix, ::testing::ValuesIn(program_names()),
                         [](const auto& info) { return info.param; });

// Quadruple batch: four nested batch levels, ragged inner lists included.
TEST(TransformMatrixDeep, QuadrupleBatchOfRaggedItems) {
  IRPtr ir = trace_json(
      [&](auto in) { return op_concat(std::vector<Value>{in[0], S("|"), in[1]}, test_context().env); },
      R"(["x","y"])");
  IRPtr b4 = batch(batch(batch(batch(ir, Value()), Value()), Value()), Value());
  ASSERT_NO_THROW(validate(*b4));
  EXPECT_EQ(run_json(b4, R"([[[[["a"]]],[[["b","c"]],[["d"]]]], [[[["1"]]],[[["2","3"]],[["4"]]]]])"),
            R"([[[["a|1"]]],[[["b|2","c|3"]],[["d|4"]]]])");
  // Unbatched at the top: only the first input is batched four times.
  IRPtr b4x = batch(batch(batch(batch(ir, J("[true,false]")), J("[true,false]")), J("[true,false]")),
                    J("[true,false]"));
  EXPECT_EQ(run_json(b4x, R"([[[[["a","b"]]]], "Y"])"), R"([[[["a|Y","b|Y"]]]])");
}

TEST(TransformMatrixDeep, TriplePushforwardTakesNestedPairs) {
  IRPtr ir = trace_json([&](auto in) { return op_concat(std::vector<Value>{in[0], in[0]}, test_context().env); },
                        R"(["x"])");
  IRPtr p3 = pushforward(*pushforward(*pushforward(*ir)));
  ASSERT_NO_THROW(validate(*p3));
  // ((((p), (t1)), ((t2p), (t2t))), (((t3pp), (t3pt)), ((t3tp), (t3tt))))
  EXPECT_EQ(run_json(p3, R"([[[["a"],["b"]],[["c"],["d"]]],[[["e"],["f"]],[["g"],["h"]]]])"),
            R"([[["aa","bb"],["cc","dd"]],[["ee","ff"],["gg","hh"]]])");
}

}  // namespace
}  // namespace af::testing
