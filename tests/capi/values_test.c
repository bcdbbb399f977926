/* values_test.c — values, JSON, errors and bytes through the C API. */
#include "check.h"

#include <math.h>

/* ---- JSON ------------------------------------------------------------- */

/* JSON text -> value -> JSON text; expected kind of the top-level value. */
struct json_round_trip {
  const char* in;
  int32_t kind;
  const char* out;
};

static const struct json_round_trip json_round_trips[] = {
    /* int vs float is kept */
    {"2", AF_KIND_INT, "2"},
    {"-0", AF_KIND_INT, "0"},
    {"2.0", AF_KIND_FLOAT, "2.0"},
    {"2.50", AF_KIND_FLOAT, "2.5"},
    {"0.1", AF_KIND_FLOAT, "0.1"},
    {"-0.0", AF_KIND_FLOAT, "-0.0"},
    {"100.0", AF_KIND_FLOAT, "100.0"},
    {"1E5", AF_KIND_FLOAT, "100000.0"},
    {"1e30", AF_KIND_FLOAT, "1e+30"},
    {"1e+30", AF_KIND_FLOAT, "1e+30"},
    {"-1.25e-3", AF_KIND_FLOAT, "-0.00125"},
    {"123456.789", AF_KIND_FLOAT, "123456.789"},
    {"5e-324", AF_KIND_FLOAT, "5e-324"},
    {"1.7976931348623157e308", AF_KIND_FLOAT, "1.7976931348623157e+308"},
    {"9223372036854775807", AF_KIND_INT, "9223372036854775807"},
    {"-9223372036854775808", AF_KIND_INT, "-9223372036854775808"},
    /* other scalars */
    {"true", AF_KIND_BOOL, "true"},
    {"false", AF_KIND_BOOL, "false"},
    {"null", AF_KIND_NULL, "null"},
    {"\"\"", AF_KIND_STR, "\"\""},
    /* containers, compact output, dict insertion order kept */
    {"[]", AF_KIND_LIST, "[]"},
    {"{}", AF_KIND_DICT, "{}"},
    {" { \"z\" : 1 ,\n\t\"a\" : [ 2.0 , \"x\" ] } ", AF_KIND_DICT, "{\"z\":1,\"a\":[2.0,\"x\"]}"},
    {"{\"a\":[1,2.0,\"x\",true,false,null],\"b\":{\"c\":{},\"d\":[[]]},\"e\":-7}", AF_KIND_DICT,
     "{\"a\":[1,2.0,\"x\",true,false,null],\"b\":{\"c\":{},\"d\":[[]]},\"e\":-7}"},
    /* unicode stays UTF-8; \u escapes decode */
    {"\"h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80\"", AF_KIND_STR,
     "\"h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80\""},
    {"\"\\u00e9\\u2713\"", AF_KIND_STR, "\"\xc3\xa9\xe2\x9c\x93\""},
    {"\"\\ud83d\\ude00\"", AF_KIND_STR, "\"\xf0\x9f\x98\x80\""},
    {"{\"cl\xc3\xa9\":\"v\"}", AF_KIND_DICT, "{\"cl\xc3\xa9\":\"v\"}"},
    /* escapes: what must be escaped is, "/" need not be */
    {"\"a\\\"b\\\\c\\nd\\te\\u0001f\\/g\"", AF_KIND_STR, "\"a\\\"b\\\\c\\nd\\te\\u0001f/g\""},
    {"\"\\u0000\"", AF_KIND_STR, "\"\\u0000\""},
    {"{\"a\\\"b\\n\":[{\"\":\"\"}]}", AF_KIND_DICT, "{\"a\\\"b\\n\":[{\"\":\"\"}]}"},
};

static void json_round_trips_keep_kinds_and_text(void) {
  size_t i;
  for (i = 0; i < sizeof json_round_trips / sizeof json_round_trips[0]; i++) {
    const struct json_round_trip* t = &json_round_trips[i];
    af_value_t* v = mk_json(t->in);
    if (!v) continue;
    if (af_value_kind(v) != t->kind) {
      check_fail(__FILE__, __LINE__, "kind of %s is %d, expected %d", t->in,
                 (int)af_value_kind(v), (int)t->kind);
    }
    if (!CHECK_JSON(v, t->out)) printf("    input: %s\n", t->in);
    af_value_free(v);
  }
}

static void json_reads_the_right_leaf_values(void) {
  af_value_t* v = mk_json("[2, 2.0, 2.5, -9223372036854775808, true, \"a\\nb\", null]");
  af_value_t* item = NULL;
  int64_t i = 0;
  double f = 0;
  int32_t b = 0;
  const char* s = NULL;
  size_t n = 0;
  if (!v) return;
  CHECK_OK(af_value_len(v, &n));
  CHECK_INT_EQ(n, 7);
  CHECK_OK(af_value_index(v, 0, &item));
  CHECK_INT_EQ(af_value_kind(item), AF_KIND_INT);
  CHECK_OK(af_value_get_int(item, &i));
  CHECK_INT_EQ(i, 2);
  af_value_free(item);
  CHECK_OK(af_value_index(v, 1, &item));
  CHECK_INT_EQ(af_value_kind(item), AF_KIND_FLOAT);
  CHECK_OK(af_value_get_float(item, &f));
  CHECK(f == 2.0);
  af_value_free(item);
  CHECK_OK(af_value_index(v, 2, &item));
  CHECK_OK(af_value_get_float(item, &f));
  CHECK(f == 2.5);
  af_value_free(item);
  CHECK_OK(af_value_index(v, 3, &item));
  CHECK_OK(af_value_get_int(item, &i));
  CHECK(i == INT64_MIN);
  af_value_free(item);
  CHECK_OK(af_value_index(v, 4, &item));
  CHECK_OK(af_value_get_bool(item, &b));
  CHECK_INT_EQ(b, 1);
  af_value_free(item);
  CHECK_OK(af_value_index(v, 5, &item));
  CHECK_OK(af_value_get_str(item, &s, &n));
  CHECK_MEM_EQ(s, n, "a\nb");
  af_value_free(item);
  CHECK_OK(af_value_index(v, 6, &item));
  CHECK_INT_EQ(af_value_kind(item), AF_KIND_NULL);
  af_value_free(item);
  af_value_free(v);
}

static void json_input_is_length_delimited(void) {
  /* Not NUL-terminated: only the first len bytes are JSON. */
  const char text[] = "[1,2]xyz";
  af_value_t* v = NULL;
  if (CHECK_OK(af_value_from_json(ctx, text, 5, &v))) CHECK_JSON(v, "[1,2]");
  af_value_free(v);
  v = NULL;
  /* An embedded NUL inside a string literal is not JSON (raw control char). */
  CHECK_ERR(af_value_from_json(ctx, "\"a\0b\"", 5, &v), AF_ERR_INVALID_ARGUMENT, "json");
  CHECK_NULLED(v, af_value_free);
}

static const char* const malformed_json[] = {
    "",       "   ",        "[1,2,]",      "{\"a\":1,}", "[1,2",         "{\"a\":1",
    "\"abc",  "tru",        "nul",         "hello",      "[1] x",        "{} {}",
    "01",     "1.",         ".5",          "+1",         "NaN",          "Infinity",
    "-",      "{'a':1}",    "[1 2]",       "{\"a\"}",    "{\"a\" 1}",    "{1:2}",
    "\"\\x\"", "\"\\u12\"", "\"a\nb\"",    "[,]",        "]",            "\"\\ud800\"",
    "\"\\udc00\\ud800\"",
};

static void malformed_json_is_invalid_argument(void) {
  size_t i;
  for (i = 0; i < sizeof malformed_json / sizeof malformed_json[0]; i++) {
    af_value_t* v = (af_value_t*)&v; /* a non-NULL sentinel */
    af_error_t* e = af_value_from_json(ctx, malformed_json[i], strlen(malformed_json[i]), &v);
    if (!CHECK_ERR(e, AF_ERR_INVALID_ARGUMENT, "json")) {
      printf("    input: ");
      check_print_bytes(malformed_json[i], strlen(malformed_json[i]));
      printf("\n");
    }
    CHECK_NULLED(v, af_value_free);
  }
}

static void json_integers_outside_int64_are_invalid(void) {
  static const char* const too_big[] = {"9223372036854775808", "-9223372036854775809",
                                        "[1, 100000000000000000000]"};
  size_t i;
  for (i = 0; i < 3; i++) {
    af_value_t* v = NULL;
    if (!CHECK_ERR(af_value_from_json(ctx, too_big[i], strlen(too_big[i]), &v),
                   AF_ERR_INVALID_ARGUMENT, "int64|integer|range"))
      printf("    input: %s\n", too_big[i]);
    CHECK_NULLED(v, af_value_free);
  }
}

static const char* const invalid_utf8_json[] = {
    "\"\xff\"",                /* never valid */
    "\"\xe2\x82\"",            /* truncated 3-byte sequence */
    "\"\xc0\xaf\"",            /* overlong '/' */
    "\"\xed\xa0\x80\"",        /* UTF-16 surrogate encoded in UTF-8 */
    "\"\xf4\x90\x80\x80\"",    /* beyond U+10FFFF */
    "{\"\xff\":1}",            /* in a key */
    "[\"ok\", \"\x80\"]",      /* lone continuation byte, nested */
};

static void json_with_invalid_utf8_is_invalid_argument(void) {
  size_t i;
  for (i = 0; i < sizeof invalid_utf8_json / sizeof invalid_utf8_json[0]; i++) {
    af_value_t* v = NULL;
    if (!CHECK_ERR(af_value_from_json(ctx, invalid_utf8_json[i], strlen(invalid_utf8_json[i]), &v),
                   AF_ERR_INVALID_ARGUMENT, "utf-8|utf8")) {
      printf("    input: ");
      check_print_bytes(invalid_utf8_json[i], strlen(invalid_utf8_json[i]));
      printf("\n");
    }
    CHECK_NULLED(v, af_value_free);
  }
}

static void json_duplicate_keys_are_invalid(void) {
  static const char* const dups[] = {"{\"a\":1,\"a\":2}", "{\"a\":1,\"b\":2,\"a\":1}",
                                     "[{\"x\":{\"k\":1,\"k\":1}}]"};
  size_t i;
  for (i = 0; i < 3; i++) {
    af_value_t* v = NULL;
    if (!CHECK_ERR(af_value_from_json(ctx, dups[i], strlen(dups[i]), &v),
                   AF_ERR_INVALID_ARGUMENT, "duplicate"))
      printf("    input: %s\n", dups[i]);
    CHECK_NULLED(v, af_value_free);
  }
}

static void json_deep_nesting_never_crashes(void) {
  /* 100000 nested lists: either rejected (INVALID_ARGUMENT) or kept exactly. */
  enum { depth = 100000 };
  char* text = (char*)malloc(2 * depth + 1);
  af_value_t* v = NULL;
  af_error_t* e;
  memset(text, '[', depth);
  memset(text + depth, ']', depth);
  text[2 * depth] = 0;
  e = af_value_from_json(ctx, text, 2 * depth, &v);
  if (e) {
    CHECK_ERR(e, AF_ERR_INVALID_ARGUMENT, "depth|nest|deep");
    CHECK_NULLED(v, af_value_free);
  } else {
    CHECK_JSON(v, text);
    af_value_free(v);
  }
  free(text);
}

static void nan_and_infinity_do_not_serialize(void) {
  double specials[3];
  size_t i;
  specials[0] = NAN;
  specials[1] = INFINITY;
  specials[2] = -INFINITY;
  for (i = 0; i < 3; i++) {
    af_value_t* v = mk_float(specials[i]);
    af_value_t* list = NULL;
    af_bytes_t b;
    double f = 0;
    b.data = (uint8_t*)&b; /* sentinel: must be reset */
    b.len = 99;
    if (!v) continue;
    CHECK_INT_EQ(af_value_kind(v), AF_KIND_FLOAT);
    CHECK_OK(af_value_get_float(v, &f));
    CHECK(isnan(specials[i]) ? isnan(f) : f == specials[i]);
    CHECK_ERR(af_value_to_json(v, &b), AF_ERR_INVALID_ARGUMENT, "nan|inf|finite");
    CHECK(b.data == NULL && b.len == 0);
    /* Also when nested. */
    if (CHECK_OK(af_value_list(ctx, (const af_value_t* const*)&v, 1, &list))) {
      b.data = NULL;
      b.len = 0;
      CHECK_ERR(af_value_to_json(list, &b), AF_ERR_INVALID_ARGUMENT, "nan|inf|finite");
      CHECK(b.data == NULL && b.len == 0);
    }
    af_value_free(list);
    af_value_free(v);
  }
}

/* ---- constructors and accessors -------------------------------------- */

static void scalar_constructors(void) {
  af_value_t* v = NULL;
  int64_t i = 0;
  double f = 0;
  int32_t b = -1;
  const char* s = NULL;
  size_t n = 0;

  CHECK_OK(af_value_null(ctx, &v));
  CHECK_INT_EQ(af_value_kind(v), AF_KIND_NULL);
  CHECK_JSON(v, "null");
  af_value_free(v);

  v = mk_bool(0);
  CHECK_INT_EQ(af_value_kind(v), AF_KIND_BOOL);
  CHECK_OK(af_value_get_bool(v, &b));
  CHECK_INT_EQ(b, 0);
  CHECK_JSON(v, "false");
  af_value_free(v);
  v = mk_bool(2); /* any non-zero is true */
  CHECK_OK(af_value_get_bool(v, &b));
  CHECK_INT_EQ(b, 1);
  CHECK_JSON(v, "true");
  af_value_free(v);

  v = mk_int(INT64_MIN);
  CHECK_INT_EQ(af_value_kind(v), AF_KIND_INT);
  CHECK_OK(af_value_get_int(v, &i));
  CHECK(i == INT64_MIN);
  CHECK_JSON(v, "-9223372036854775808");
  af_value_free(v);
  v = mk_int(INT64_MAX);
  CHECK_JSON(v, "9223372036854775807");
  af_value_free(v);

  v = mk_float(2.0);
  CHECK_INT_EQ(af_value_kind(v), AF_KIND_FLOAT);
  CHECK_OK(af_value_get_float(v, &f));
  CHECK(f == 2.0);
  CHECK_JSON(v, "2.0");
  af_value_free(v);
  v = mk_float(1e30);
  CHECK_JSON(v, "1e+30");
  af_value_free(v);
  v = mk_float(0.1);
  CHECK_JSON(v, "0.1");
  af_value_free(v);
  v = mk_float(-0.0);
  CHECK_JSON(v, "-0.0");
  af_value_free(v);
  v = mk_float(2.5);
  CHECK_JSON(v, "2.5");
  af_value_free(v);

  /* Strings: length-delimited, may hold NUL, borrowed bytes. */
  v = NULL;
  CHECK_OK(af_value_str(ctx, "abcdef", 3, &v));
  CHECK_INT_EQ(af_value_kind(v), AF_KIND_STR);
  CHECK_OK(af_value_get_str(v, &s, &n));
  CHECK_MEM_EQ(s, n, "abc");
  CHECK_JSON(v, "\"abc\"");
  af_value_free(v);
  v = NULL;
  CHECK_OK(af_value_str(ctx, "a\0b", 3, &v));
  CHECK_OK(af_value_get_str(v, &s, &n));
  CHECK_MEM_EQ_N(s, n, "a\0b", 3);
  CHECK_JSON(v, "\"a\\u0000b\"");
  af_value_free(v);
  v = NULL;
  CHECK_OK(af_value_str(ctx, "", 0, &v));
  CHECK_OK(af_value_get_str(v, &s, &n));
  CHECK_INT_EQ(n, 0);
  CHECK(s != NULL);
  CHECK_JSON(v, "\"\"");
  af_value_free(v);
  v = mk_str("h\xc3\xa9 \"q\" \\ \x01\x1f\x7f \xf0\x9f\x98\x80");
  CHECK_JSON(v, "\"h\xc3\xa9 \\\"q\\\" \\\\ \\u0001\\u001f\x7f \xf0\x9f\x98\x80\"");
  af_value_free(v);
}

static void invalid_utf8_strings_are_rejected(void) {
  static const char* const bad[] = {"\xff", "\xe2\x82", "\xc0\xaf", "a\xed\xa0\x80z",
                                    "\xf4\x90\x80\x80", "\x80"};
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    af_value_t* v = (af_value_t*)&v;
    const char* key = bad[i];
    size_t key_len = strlen(bad[i]);
    af_value_t* one = mk_int(1);
    if (!CHECK_ERR(af_value_str(ctx, bad[i], strlen(bad[i]), &v), AF_ERR_INVALID_ARGUMENT,
                   "utf-8|utf8")) {
      printf("    input: ");
      check_print_bytes(bad[i], strlen(bad[i]));
      printf("\n");
    }
    CHECK_NULLED(v, af_value_free);
    /* The same bytes as a dict key. */
    v = (af_value_t*)&v;
    CHECK_ERR(af_value_dict(ctx, &key, &key_len, (const af_value_t* const*)&one, 1, &v),
              AF_ERR_INVALID_ARGUMENT, "utf-8|utf8");
    CHECK_NULLED(v, af_value_free);
    af_value_free(one);
  }
}

static void lists(void) {
  af_value_t* items[3];
  af_value_t* list = NULL;
  af_value_t* item = NULL;
  af_value_t* empty = NULL;
  size_t n = 99;
  int64_t i = 0;
  items[0] = mk_int(1);
  items[1] = mk_str("two");
  items[2] = mk_json("[3.0]");
  if (!CHECK_OK(af_value_list(ctx, (const af_value_t* const*)items, 3, &list))) return;
  /* The caller keeps its own references. */
  af_value_free(items[0]);
  af_value_free(items[1]);
  af_value_free(items[2]);
  CHECK_INT_EQ(af_value_kind(list), AF_KIND_LIST);
  CHECK_OK(af_value_len(list, &n));
  CHECK_INT_EQ(n, 3);
  CHECK_JSON(list, "[1,\"two\",[3.0]]");
  CHECK_OK(af_value_index(list, 0, &item));
  CHECK_OK(af_value_get_int(item, &i));
  CHECK_INT_EQ(i, 1);
  af_value_free(item);
  item = NULL;
  /* An item outlives the list it came from. */
  CHECK_OK(af_value_index(list, 2, &item));
  af_value_free(list);
  CHECK_JSON(item, "[3.0]");
  af_value_free(item);

  /* n == 0 needs no array. */
  if (CHECK_OK(af_value_list(ctx, NULL, 0, &empty))) {
    CHECK_OK(af_value_len(empty, &n));
    CHECK_INT_EQ(n, 0);
    CHECK_JSON(empty, "[]");
  }
  af_value_free(empty);
}

static void dicts(void) {
  const char* keys[3] = {"zeta", "alphaXXX", "mid"};
  size_t key_lens[3] = {4, 5, 3}; /* "alpha": keys are length-delimited */
  af_value_t* vals[3];
  af_value_t* d = NULL;
  af_value_t* got = NULL;
  af_value_t* empty = NULL;
  const char* k = NULL;
  size_t n = 0;
  vals[0] = mk_int(1);
  vals[1] = mk_float(2.0);
  vals[2] = mk_json("{\"in\":[true]}");
  if (!CHECK_OK(af_value_dict(ctx, keys, key_lens, (const af_value_t* const*)vals, 3, &d))) {
    af_value_free(vals[0]);
    af_value_free(vals[1]);
    af_value_free(vals[2]);
    return;
  }
  af_value_free(vals[0]);
  af_value_free(vals[1]);
  af_value_free(vals[2]);
  CHECK_INT_EQ(af_value_kind(d), AF_KIND_DICT);
  CHECK_OK(af_value_len(d, &n));
  CHECK_INT_EQ(n, 3);
  /* Insertion order for display and for index/key_at. */
  CHECK_JSON(d, "{\"zeta\":1,\"alpha\":2.0,\"mid\":{\"in\":[true]}}");
  CHECK_OK(af_value_key_at(d, 0, &k, &n));
  CHECK_MEM_EQ(k, n, "zeta");
  CHECK_OK(af_value_key_at(d, 1, &k, &n));
  CHECK_MEM_EQ(k, n, "alpha");
  CHECK_OK(af_value_key_at(d, 2, &k, &n));
  CHECK_MEM_EQ(k, n, "mid");
  CHECK_OK(af_value_index(d, 1, &got));
  CHECK_JSON(got, "2.0");
  af_value_free(got);
  got = NULL;
  CHECK_OK(af_value_key(d, "mid", 3, &got));
  CHECK_JSON(got, "{\"in\":[true]}");
  af_value_free(got);
  got = NULL;
  CHECK_OK(af_value_key(d, "alphabet", 5, &got)); /* length-delimited lookup */
  CHECK_JSON(got, "2.0");
  af_value_free(got);
  got = (af_value_t*)&got;
  CHECK_ERR(af_value_key(d, "missing_key", 11, &got), AF_ERR_NOT_FOUND, "missing_key");
  CHECK_NULLED(got, af_value_free);
  got = (af_value_t*)&got;
  CHECK_ERR(af_value_key(d, "", 0, &got), AF_ERR_NOT_FOUND, "key");
  CHECK_NULLED(got, af_value_free);
  af_value_free(d);

  if (CHECK_OK(af_value_dict(ctx, NULL, NULL, NULL, 0, &empty))) {
    CHECK_INT_EQ(af_value_kind(empty), AF_KIND_DICT);
    CHECK_JSON(empty, "{}");
  }
  af_value_free(empty);
}

static void dict_lookup_among_many_keys(void) {
  /* Keys inserted in reverse order, with shared prefixes. */
  char json[4096];
  size_t pos = 0;
  int i;
  af_value_t* d;
  pos += (size_t)sprintf(json + pos, "{");
  for (i = 49; i >= 0; i--)
    pos += (size_t)sprintf(json + pos, "%s\"k%d\":%d", i < 49 ? "," : "", i, i);
  sprintf(json + pos, "}");
  d = mk_json(json);
  if (!d) return;
  for (i = 0; i < 50; i++) {
    char key[8];
    af_value_t* got = NULL;
    int64_t n = -1;
    sprintf(key, "k%d", i);
    if (CHECK_OK(af_value_key(d, key, strlen(key), &got)) && CHECK_OK(af_value_get_int(got, &n)))
      CHECK_INT_EQ(n, i);
    af_value_free(got);
  }
  {
    const char* k = NULL;
    size_t n = 0;
    CHECK_OK(af_value_key_at(d, 0, &k, &n));
    CHECK_MEM_EQ(k, n, "k49");
    CHECK_OK(af_value_key_at(d, 49, &k, &n));
    CHECK_MEM_EQ(k, n, "k0");
  }
  af_value_free(d);
}

static void dict_duplicate_keys_are_invalid(void) {
  const char* keys[3] = {"a", "b", "a"};
  size_t key_lens[3] = {1, 1, 1};
  af_value_t* vals[3];
  af_value_t* d = (af_value_t*)&d;
  vals[0] = mk_int(1);
  vals[1] = mk_int(2);
  vals[2] = mk_int(3);
  CHECK_ERR(af_value_dict(ctx, keys, key_lens, (const af_value_t* const*)vals, 3, &d),
            AF_ERR_INVALID_ARGUMENT, "duplicate", "\"a\"|'a'|: a|key a");
  CHECK_NULLED(d, af_value_free);
  /* Distinct only after the length cut: "ab" and "ac" with len 1 are both "a". */
  keys[0] = "ab";
  keys[1] = "ac";
  d = (af_value_t*)&d;
  CHECK_ERR(af_value_dict(ctx, keys, key_lens, (const af_value_t* const*)vals, 2, &d),
            AF_ERR_INVALID_ARGUMENT, "duplicate");
  CHECK_NULLED(d, af_value_free);
  af_value_free(vals[0]);
  af_value_free(vals[1]);
  af_value_free(vals[2]);
}

static void wrong_kinds_and_ranges(void) {
  af_value_t* s = mk_str("text");
  af_value_t* i = mk_int(7);
  af_value_t* f = mk_float(7.0);
  af_value_t* list = mk_json("[1,2]");
  af_value_t* d = mk_json("{\"k\":1}");
  af_value_t* out = NULL;
  const char* str = NULL;
  const char* key = NULL;
  size_t n = 0;
  int64_t iv = 0;
  double fv = 0;
  int32_t bv = 0;

  /* Leaf reads name the kinds. */
  iv = 5;
  CHECK_ERR(af_value_get_int(s, &iv), AF_ERR_INVALID_ARGUMENT, "int", "str");
  CHECK_INT_EQ(iv, 0);
  fv = 5;
  CHECK_ERR(af_value_get_float(i, &fv), AF_ERR_INVALID_ARGUMENT, "float", "int");
  CHECK(fv == 0);
  iv = 5;
  CHECK_ERR(af_value_get_int(f, &iv), AF_ERR_INVALID_ARGUMENT, "int", "float");
  CHECK_INT_EQ(iv, 0);
  bv = 5;
  CHECK_ERR(af_value_get_bool(i, &bv), AF_ERR_INVALID_ARGUMENT, "bool", "int");
  CHECK_INT_EQ(bv, 0);
  str = "x";
  n = 5;
  CHECK_ERR(af_value_get_str(list, &str, &n), AF_ERR_INVALID_ARGUMENT, "str", "list");
  CHECK(str == NULL);
  CHECK_INT_EQ(n, 0);

  /* Container reads on the wrong kinds. */
  n = 5;
  CHECK_ERR(af_value_len(s, &n), AF_ERR_INVALID_ARGUMENT, "str");
  CHECK_INT_EQ(n, 0);
  out = (af_value_t*)&out;
  CHECK_ERR(af_value_index(i, 0, &out), AF_ERR_INVALID_ARGUMENT, "int");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_value_key(list, "k", 1, &out), AF_ERR_INVALID_ARGUMENT, "dict", "list");
  CHECK_NULLED(out, af_value_free);
  key = "x";
  n = 5;
  CHECK_ERR(af_value_key_at(list, 0, &key, &n), AF_ERR_INVALID_ARGUMENT, "dict", "list");
  CHECK(key == NULL);
  CHECK_INT_EQ(n, 0);

  /* Out of range. */
  out = (af_value_t*)&out;
  CHECK_ERR(af_value_index(list, 2, &out), AF_ERR_INVALID_ARGUMENT, "2");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_value_index(list, (size_t)-1, &out), AF_ERR_INVALID_ARGUMENT, "index|range");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_value_index(d, 1, &out), AF_ERR_INVALID_ARGUMENT, "index|range");
  CHECK_NULLED(out, af_value_free);
  key = "x";
  CHECK_ERR(af_value_key_at(d, 1, &key, &n), AF_ERR_INVALID_ARGUMENT, "index|range");
  CHECK(key == NULL);

  af_value_free(s);
  af_value_free(i);
  af_value_free(f);
  af_value_free(list);
  af_value_free(d);
}

static void clone_and_free_count_references(void) {
  af_value_t* v = mk_json("{\"a\":[\"deep\",\"tree\"]}");
  af_value_t* c1;
  af_value_t* c2;
  const char* s = NULL;
  size_t n = 0;
  af_value_t* str = mk_str("borrowed bytes");
  af_value_t* str2;
  if (!v || !str) return;
  c1 = af_value_clone(v);
  c2 = af_value_clone(c1);
  CHECK(c1 == v);
  CHECK(c2 == v);
  af_value_free(v);
  af_value_free(c1);
  CHECK_JSON(c2, "{\"a\":[\"deep\",\"tree\"]}");
  af_value_free(c2);
  /* Borrowed strings stay valid while any reference lives. */
  str2 = af_value_clone(str);
  CHECK_OK(af_value_get_str(str, &s, &n));
  af_value_free(str);
  CHECK_MEM_EQ(s, n, "borrowed bytes");
  af_value_free(str2);
  CHECK(af_value_clone(NULL) == NULL);
  af_value_free(NULL);
}

/* ---- NULL handling ---------------------------------------------------- */

static void null_context_makes_values_but_no_operations(void) {
  af_value_t* v;
  af_value_t* item = mk_int(1);
  const char* key = "k";
  size_t key_len = 1;
#define EXPECT_NULL_CTX(call)                               \
  do {                                                      \
    v = (af_value_t*)&v;                                    \
    CHECK_ERR(call, AF_ERR_INVALID_ARGUMENT, "context|ctx"); \
    CHECK_NULLED(v, af_value_free);                         \
  } while (0)
  /* Values are not tied to a context: constructors accept NULL (a host
   * function builds its result without one). Operations need one. */
#define EXPECT_MADE(call, json)     \
  do {                              \
    v = NULL;                       \
    if (CHECK_OK(call)) {           \
      CHECK_JSON(v, json);          \
      af_value_free(v);             \
    }                               \
  } while (0)
  EXPECT_MADE(af_value_from_json(NULL, "1", 1, &v), "1");
  EXPECT_MADE(af_value_null(NULL, &v), "null");
  EXPECT_MADE(af_value_bool(NULL, 1, &v), "true");
  EXPECT_MADE(af_value_int(NULL, 1, &v), "1");
  EXPECT_MADE(af_value_float(NULL, 1.0, &v), "1.0");
  EXPECT_MADE(af_value_str(NULL, "a", 1, &v), "\"a\"");
  EXPECT_MADE(af_value_list(NULL, (const af_value_t* const*)&item, 1, &v), "[1]");
  EXPECT_MADE(af_value_dict(NULL, &key, &key_len, (const af_value_t* const*)&item, 1, &v), "{\"k\":1}");
#undef EXPECT_MADE
  EXPECT_NULL_CTX(af_format(NULL, "{}", 2, (const af_value_t* const*)&item, 1, NULL, &v));
  EXPECT_NULL_CTX(af_concat(NULL, NULL, 0, &v));
  EXPECT_NULL_CTX(af_match(NULL, item, item, &v));
  EXPECT_NULL_CTX(af_stop_gradient(NULL, item, &v));
  EXPECT_NULL_CTX(af_depends(NULL, item, NULL, 0, &v));
  EXPECT_NULL_CTX(af_checkpoint(NULL, item, "k", 1, "c", 1, &v));
#undef EXPECT_NULL_CTX
  af_value_free(item);
  CHECK_ERR(af_context_new(NULL), AF_ERR_INVALID_ARGUMENT, "out");
  af_context_free(NULL);
}

static void null_out_pointers_are_invalid_argument(void) {
  af_value_t* item = mk_int(1);
  af_value_t* list = mk_json("[1]");
  af_value_t* d = mk_json("{\"k\":1}");
  af_value_t* s = mk_str("s");
  const char* key = "k";
  const char* str = NULL;
  size_t key_len = 1, n = 0;
  CHECK_ERR(af_value_from_json(ctx, "1", 1, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_null(ctx, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_bool(ctx, 1, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_int(ctx, 1, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_float(ctx, 1, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_str(ctx, "a", 1, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_list(ctx, (const af_value_t* const*)&item, 1, NULL), AF_ERR_INVALID_ARGUMENT,
            "out");
  CHECK_ERR(af_value_dict(ctx, &key, &key_len, (const af_value_t* const*)&item, 1, NULL),
            AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_to_json(item, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_len(list, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_index(list, 0, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_key(d, "k", 1, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_key_at(d, 0, NULL, &n), AF_ERR_INVALID_ARGUMENT, "key");
  CHECK_ERR(af_value_key_at(d, 0, &key, NULL), AF_ERR_INVALID_ARGUMENT, "len");
  CHECK_ERR(af_value_get_str(s, NULL, &n), AF_ERR_INVALID_ARGUMENT, "out|s");
  CHECK_ERR(af_value_get_str(s, &str, NULL), AF_ERR_INVALID_ARGUMENT, "len");
  CHECK_ERR(af_value_get_int(item, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_get_float(item, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_value_get_bool(item, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_format(ctx, "{}", 2, (const af_value_t* const*)&item, 1, NULL, NULL),
            AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_concat(ctx, (const af_value_t* const*)&s, 1, NULL), AF_ERR_INVALID_ARGUMENT,
            "out");
  CHECK_ERR(af_match(ctx, s, s, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  af_value_free(item);
  af_value_free(list);
  af_value_free(d);
  af_value_free(s);
}

static void null_values_and_arrays_are_invalid_argument(void) {
  af_value_t* v = NULL;
  af_value_t* good = mk_int(1);
  const af_value_t* with_null[2];
  const char* keys[2] = {"a", NULL};
  size_t key_lens[2] = {1, 1};
  const char* s = "x";
  size_t n = 7;
  int64_t i = 7;
  double f = 7;
  int32_t b = 7;
  af_bytes_t bytes = {NULL, 0};
  with_null[0] = good;
  with_null[1] = NULL;

  CHECK_INT_EQ(af_value_kind(NULL), -1);
  CHECK_ERR(af_value_to_json(NULL, &bytes), AF_ERR_INVALID_ARGUMENT, "null|value");
  CHECK(bytes.data == NULL && bytes.len == 0);
  CHECK_ERR(af_value_len(NULL, &n), AF_ERR_INVALID_ARGUMENT, "null|value");
  CHECK_INT_EQ(n, 0);
  v = (af_value_t*)&v;
  CHECK_ERR(af_value_index(NULL, 0, &v), AF_ERR_INVALID_ARGUMENT, "null|value");
  CHECK_NULLED(v, af_value_free);
  v = (af_value_t*)&v;
  CHECK_ERR(af_value_key(NULL, "a", 1, &v), AF_ERR_INVALID_ARGUMENT, "null|value");
  CHECK_NULLED(v, af_value_free);
  CHECK_ERR(af_value_key_at(NULL, 0, &s, &n), AF_ERR_INVALID_ARGUMENT, "null|value");
  CHECK(s == NULL);
  s = "x";
  CHECK_ERR(af_value_get_str(NULL, &s, &n), AF_ERR_INVALID_ARGUMENT, "null|value");
  CHECK(s == NULL);
  CHECK_ERR(af_value_get_int(NULL, &i), AF_ERR_INVALID_ARGUMENT, "null|value");
  CHECK_INT_EQ(i, 0);
  CHECK_ERR(af_value_get_float(NULL, &f), AF_ERR_INVALID_ARGUMENT, "null|value");
  CHECK(f == 0);
  CHECK_ERR(af_value_get_bool(NULL, &b), AF_ERR_INVALID_ARGUMENT, "null|value");
  CHECK_INT_EQ(b, 0);

  /* NULL arrays with n > 0, NULL elements, NULL strings with len > 0. */
  v = (af_value_t*)&v;
  CHECK_ERR(af_value_from_json(ctx, NULL, 3, &v), AF_ERR_INVALID_ARGUMENT, "null|json");
  CHECK_NULLED(v, af_value_free);
  v = (af_value_t*)&v;
  CHECK_ERR(af_value_str(ctx, NULL, 5, &v), AF_ERR_INVALID_ARGUMENT, "null|str");
  CHECK_NULLED(v, af_value_free);
  v = (af_value_t*)&v;
  CHECK_ERR(af_value_list(ctx, NULL, 2, &v), AF_ERR_INVALID_ARGUMENT, "null|items");
  CHECK_NULLED(v, af_value_free);
  v = (af_value_t*)&v;
  CHECK_ERR(af_value_list(ctx, with_null, 2, &v), AF_ERR_INVALID_ARGUMENT, "null|1");
  CHECK_NULLED(v, af_value_free);
  v = (af_value_t*)&v;
  CHECK_ERR(af_value_dict(ctx, NULL, key_lens, with_null, 1, &v), AF_ERR_INVALID_ARGUMENT,
            "null|key");
  CHECK_NULLED(v, af_value_free);
  v = (af_value_t*)&v;
  CHECK_ERR(af_value_dict(ctx, keys, NULL, with_null, 1, &v), AF_ERR_INVALID_ARGUMENT,
            "null|len");
  CHECK_NULLED(v, af_value_free);
  v = (af_value_t*)&v;
  CHECK_ERR(af_value_dict(ctx, keys, key_lens, NULL, 1, &v), AF_ERR_INVALID_ARGUMENT,
            "null|value");
  CHECK_NULLED(v, af_value_free);
  v = (af_value_t*)&v;
  CHECK_ERR(af_value_dict(ctx, keys, key_lens, with_null, 2, &v), AF_ERR_INVALID_ARGUMENT,
            "null");
  CHECK_NULLED(v, af_value_free);
  v = (af_value_t*)&v;
  CHECK_ERR(af_value_key(good, NULL, 1, &v), AF_ERR_INVALID_ARGUMENT, "null|key|dict");
  CHECK_NULLED(v, af_value_free);
  af_value_free(good);
}

/* ---- errors, bytes, version ------------------------------------------- */

static void errors_made_by_callers(void) {
  af_error_t* e = af_error_new(AF_ERR_NOT_FOUND, "boomXYZ", 4);
  CHECK(e != NULL);
  CHECK_INT_EQ(af_error_code(e), AF_ERR_NOT_FOUND);
  CHECK_STR_EQ(af_error_message(e), "boom");
  CHECK(af_error_cause(e) == NULL);
  af_error_free(e);

  /* Invalid UTF-8 becomes U+FFFD. */
  e = af_error_new(AF_ERR_PROVIDER, "a\xff" "b", 3);
  CHECK_INT_EQ(af_error_code(e), AF_ERR_PROVIDER);
  CHECK_STR_EQ(af_error_message(e), "a\xef\xbf\xbd" "b");
  af_error_free(e);

  e = af_error_new(AF_ERR_IO, NULL, 0);
  CHECK_INT_EQ(af_error_code(e), AF_ERR_IO);
  CHECK_STR_EQ(af_error_message(e), "");
  af_error_free(e);

  CHECK_INT_EQ(af_error_code(NULL), AF_ERR_INVALID_ARGUMENT);
  CHECK_STR_EQ(af_error_message(NULL), "");
  CHECK(af_error_cause(NULL) == NULL);
  af_error_free(NULL);
}

static void bytes_free_accepts_null_and_zeroed(void) {
  af_bytes_t b = {NULL, 0};
  af_value_t* v = mk_json("[\"x\"]");
  af_bytes_free(NULL);
  af_bytes_free(&b);
  CHECK(b.data == NULL && b.len == 0);
  if (CHECK_OK(af_value_to_json(v, &b))) {
    CHECK_MEM_EQ((const char*)b.data, b.len, "[\"x\"]");
    CHECK(b.data[b.len] == 0);
    af_bytes_free(&b);
    CHECK(b.data == NULL && b.len == 0);
    af_bytes_free(&b); /* twice is fine: it was zeroed */
  }
  af_value_free(v);
}

static void version(void) {
  CHECK_STR_EQ(af_version(), AF_VERSION_STRING);
  CHECK_INT_EQ(af_abi_version(), AF_ABI_VERSION);
}

static void contexts_are_independent(void) {
  af_context_t* other = NULL;
  af_value_t* v = NULL;
  if (!CHECK_OK(af_context_new(&other))) return;
  CHECK(other != ctx);
  CHECK_OK(af_value_str(other, "x", 1, &v));
  af_context_free(other); /* values are not tied to a context */
  CHECK_JSON(v, "\"x\"");
  af_value_free(v);
}

/* Values nest at most 512 deep: building a list 300 000 deep (which once
 * crashed af_value_to_json and af_value_free) stops at the limit with
 * INVALID_ARGUMENT, and everything built still prints and frees. */
static void nesting_is_bounded_at_construction(void) {
  af_value_t* v = mk_int(7);
  af_value_t* deeper = NULL;
  af_bytes_t json = {NULL, 0};
  int depth = 0, refused = 0;
  for (depth = 0; depth < 300000 && v; depth++) {
    af_error_t* e = af_value_list(ctx, (const af_value_t* const*)&v, 1, &deeper);
    if (e) {
      CHECK_ERR(e, AF_ERR_INVALID_ARGUMENT, "more than 512 levels deep");
      CHECK(deeper == NULL);
      refused = 1;
      break;
    }
    af_value_free(v);
    v = deeper;
    deeper = NULL;
  }
  CHECK(refused);
  CHECK_INT_EQ(depth, 512);
  if (CHECK_OK(af_value_to_json(v, &json))) CHECK_INT_EQ((long)json.len, 512 * 2 + 1);
  af_bytes_free(&json);
  {
    const char* key = "k";
    size_t key_len = 1;
    CHECK_ERR(af_value_dict(ctx, &key, &key_len, (const af_value_t* const*)&v, 1, &deeper),
              AF_ERR_INVALID_ARGUMENT, "512");
  }
  af_value_free(v);
  {
    /* JSON too. */
    size_t n = 600, i;
    char* text = malloc(2 * n + 1);
    for (i = 0; i < n; i++) {
      text[i] = '[';
      text[n + i] = ']';
    }
    text[2 * n] = 0;
    v = NULL;
    CHECK_ERR(af_value_from_json(ctx, text, 2 * n, &v), AF_ERR_INVALID_ARGUMENT, "512");
    CHECK(v == NULL);
    free(text);
  }
}

/* The context-free constructors (af_value_<kind>_new) build what the
 * deprecated af_value_<kind>(ctx, ...) forms build, with or without a
 * context, and check their arguments the same way, naming themselves. */
static void context_free_constructors_match_the_deprecated_forms(void) {
  af_value_t *n = NULL, *b = NULL, *i = NULL, *f = NULL, *s = NULL, *l = NULL, *d = NULL, *j = NULL, *bad = NULL;
  af_value_t *old_s = NULL, *old_d = NULL, *old_j = NULL;
  const char* keys[2] = {"b", "a"};
  size_t key_lens[2] = {1, 1};
  const char* dup[2] = {"k", "k"};
  CHECK_OK(af_value_null_new(&n));
  CHECK_OK(af_value_bool_new(1, &b));
  CHECK_OK(af_value_int_new(-7, &i));
  CHECK_OK(af_value_float_new(2.0, &f));
  CHECK_OK(af_value_str_new("h\xc3\xa9", 3, &s));
  {
    const af_value_t* items[4] = {n, b, i, f};
    if (CHECK_OK(af_value_list_new(items, 4, &l))) CHECK_JSON(l, "[null,true,-7,2.0]");
  }
  {
    const af_value_t* values[2] = {s, l};
    if (CHECK_OK(af_value_dict_new(keys, key_lens, values, 2, &d)))
      CHECK_JSON(d, "{\"b\":\"h\xc3\xa9\",\"a\":[null,true,-7,2.0]}");
    if (CHECK_OK(af_value_dict(NULL, keys, key_lens, values, 2, &old_d)))
      CHECK_JSON(old_d, "{\"b\":\"h\xc3\xa9\",\"a\":[null,true,-7,2.0]}");
  }
  if (CHECK_OK(af_value_json_new("{\"x\":[1,2.5]}", 13, &j))) CHECK_JSON(j, "{\"x\":[1,2.5]}");
  if (CHECK_OK(af_value_from_json(ctx, "{\"x\":[1,2.5]}", 13, &old_j))) CHECK_JSON(old_j, "{\"x\":[1,2.5]}");
  if (CHECK_OK(af_value_str(ctx, "h\xc3\xa9", 3, &old_s))) CHECK_JSON(old_s, "\"h\xc3\xa9\"");
  /* Errors name the function called. */
  CHECK_ERR(af_value_str_new("\xff", 1, &bad), AF_ERR_INVALID_ARGUMENT, "af_value_str_new", "UTF-8");
  CHECK_ERR(af_value_str_new(NULL, 2, &bad), AF_ERR_INVALID_ARGUMENT, "af_value_str_new", "NULL");
  CHECK_ERR(af_value_int_new(1, NULL), AF_ERR_INVALID_ARGUMENT, "af_value_int_new", "out");
  CHECK_ERR(af_value_json_new("{", 1, &bad), AF_ERR_INVALID_ARGUMENT, "json");
  CHECK_ERR(af_value_json_new(NULL, 0, &bad), AF_ERR_INVALID_ARGUMENT, "af_value_json_new", "json");
  CHECK_ERR(af_value_list_new(NULL, 1, &bad), AF_ERR_INVALID_ARGUMENT, "af_value_list_new", "items");
  CHECK_ERR(af_value_dict_new(NULL, NULL, NULL, 1, &bad), AF_ERR_INVALID_ARGUMENT, "af_value_dict_new", "keys");
  {
    const af_value_t* values[2] = {n, n};
    CHECK_ERR(af_value_dict_new(dup, key_lens, values, 2, &bad), AF_ERR_INVALID_ARGUMENT, "duplicate");
    CHECK_ERR(af_value_dict(NULL, dup, key_lens, values, 2, &bad), AF_ERR_INVALID_ARGUMENT, "duplicate");
  }
  CHECK_NULLED(bad, af_value_free);
  af_value_free(n);
  af_value_free(b);
  af_value_free(i);
  af_value_free(f);
  af_value_free(s);
  af_value_free(l);
  af_value_free(d);
  af_value_free(j);
  af_value_free(old_s);
  af_value_free(old_d);
  af_value_free(old_j);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(context_free_constructors_match_the_deprecated_forms),
      CASE(json_round_trips_keep_kinds_and_text),
      CASE(json_reads_the_right_leaf_values),
      CASE(json_input_is_length_delimited),
      CASE(malformed_json_is_invalid_argument),
      CASE(json_integers_outside_int64_are_invalid),
      CASE(json_with_invalid_utf8_is_invalid_argument),
      CASE(json_duplicate_keys_are_invalid),
      CASE(json_deep_nesting_never_crashes),
      CASE(nan_and_infinity_do_not_serialize),
      CASE(scalar_constructors),
      CASE(invalid_utf8_strings_are_rejected),
      CASE(lists),
      CASE(dicts),
      CASE(dict_lookup_among_many_keys),
      CASE(dict_duplicate_keys_are_invalid),
      CASE(wrong_kinds_and_ranges),
      CASE(clone_and_free_count_references),
      CASE(null_context_makes_values_but_no_operations),
      CASE(null_out_pointers_are_invalid_argument),
      CASE(null_values_and_arrays_are_invalid_argument),
      CASE(errors_made_by_callers),
      CASE(bytes_free_accepts_null_and_zeroed),
      CASE(version),
      CASE(contexts_are_independent),
      CASE(nesting_is_bounded_at_construction),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
