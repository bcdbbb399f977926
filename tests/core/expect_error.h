// EXPECT_AF_ERROR(stmt, code, fragment): stmt throws af::Error with that
// code and a message containing fragment (docs/SEMANTICS.md §5: codes are the
// contract; the fragment checks the message says what was wrong).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "value/error.h"

#define EXPECT_AF_ERROR(stmt, code_, fragment)                                            \
  do {                                                                                    \
    try {                                                                                 \
      stmt;                                                                               \
      ADD_FAILURE() << "expected af::Error containing \"" << (fragment) << "\"";          \
    } catch (const ::af::Error& e_) {                                                     \
      EXPECT_EQ(e_.code(), (code_)) << e_.what();                                         \
      EXPECT_NE(std::string(e_.what()).find(fragment), std::string::npos)                 \
          << "message: " << e_.what() << "\nexpected fragment: " << (fragment);           \
    }                                                                                     \
  } while (0)
