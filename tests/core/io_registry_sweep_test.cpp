// Every registered primitive against hand-made equations of the wrong shape
// (0..3 inputs of each leaf kind, no params or params of the wrong kind): a
// loaded graph is untrusted, so each must be refused with FORMAT, or load
// and then run to a value or an error — never crash or read out of bounds.
#include "exec/program.h"
#include "io_test_util.h"

namespace af {
namespace {

using iotest::S;

// One equation of `p` over n inputs of kind `k`, one str output, params.
io::RawGraph one_eqn(const Prim& p, size_t n, Kind k, std::vector<io::RawParam> params,
                     std::vector<Value> literals) {
  io::RawGraph g;
  g.format_version = io::kFormatVersion;
  g.producer = "sweep";
  g.prims = {{p.name, p.version}};
  g.literals = std::move(literals);
  std::vector<Value> leaves(n, S("x"));
  g.trees = {TreeDef::of(Value::list(leaves)), TreeDef::leaf()};
  if (!params.empty()) g.param_sets = {std::move(params)};
  io::RawIr r;
  for (size_t i = 0; i < n; ++i) r.vars.push_back(io::pack_aval(Aval{k, 0}));
  r.vars.push_back(io::pack_aval(Aval{Kind::Str, 0}));
  for (uint32_t i = 0; i < n; ++i) r.in_atoms.push_back(i);
  r.in_tree = 0;
  r.eqn_prim = {0};
  r.eqn_in = r.in_atoms;
  r.eqn_in_end = {uint32_t(n)};
  r.eqn_in_tree = {0};
  r.eqn_out = {uint32_t(n)};
  r.eqn_out_end = {1};
  r.eqn_out_tree = {1};
  r.eqn_params = {g.param_sets.empty() ? 0u : 1u};
  r.eqn_tags = {0};
  r.out_atoms = {uint32_t(n)};
  r.out_tree = 1;
  g.irs.push_back(std::move(r));
  return g;
}

Value sample(Kind k) {
  switch (k) {
    case Kind::Bool: return Value::boolean(true);
    case Kind::Int: return Value::integer(3);
    case Kind::Float: return Value::floating(0.5);
    default: return S("x");
  }
}

TEST(LoaderSweep, EveryPrimitiveRefusesOrRunsMisshapenEquations) {
  size_t loaded = 0, refused = 0;
  for (const Prim* p : all_prims()) {
    // Params: none; each declared name with a value of a wrong kind; an unknown name.
    std::vector<std::vector<io::RawParam>> param_variants = {{}};
    std::vector<Value> literals = {Value::integer(7), Value::list({S("a")})};
    {
      std::vector<io::RawParam> wrong;
      for (const ParamSpec& s : p->params) {
        io::RawParam r;
        r.name = s.name;
        r.kind = 0;
        r.value = s.value_kind == Kind::Int ? 1 : 0;  // a value, never an IR
        wrong.push_back(r);
      }
      std::sort(wrong.begin(), wrong.end(), [](auto& a, auto& b) { return a.name < b.name; });
      if (!wrong.empty()) param_variants.push_back(wrong);
    }
    io::RawParam unknown;
    unknown.name = "zz_unknown";
    param_variants.push_back({unknown});
    for (size_t n = 0; n <= 3; ++n)
      for (Kind k : {Kind::Str, Kind::Int, Kind::Bool})
        for (const auto& params : param_variants) {
          SCOPED_TRACE(p->name + " n=" + std::to_string(n) + " kind=" + kind_name(k));
          std::string bytes = io::seal(io::write_flatbuffer(one_eqn(*p, n, k, params, literals)));
          IRPtr ir;
          try {
            ir = io::load_ir(iotest::as_span(bytes));
          } catch (const Error& e) {
            EXPECT_EQ(e.code(), Code::Format) << e.what();
            ++refused;
            continue;
          }
          ++loaded;
          (void)to_text(*ir);
          std::vector<Value> in(n, sample(k));
          try {
            ExecContext ctx;
            RunEnv env;
            env.context = &ctx;
            (void)call(ir, in, env);
          } catch (const Error&) {
            // Refusing at run time (a missing host function, a provider) is fine.
          }
        }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(loaded, 0u);
}

}  // namespace
}  // namespace af
