#pragma once
// Helpers for tests that read scenario text: parse it and expect success, or expect an error.

#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "simulator/scenario.h"

namespace kiln::testing {

inline ScenarioSpec MustParse(std::string_view text, std::string file = "s.yaml") {
  auto r = ParseScenario(text, std::move(file));
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().Format());
  return r.ok() ? std::move(*r) : ScenarioSpec{};
}

inline Error MustFail(std::string_view text) {
  auto r = ParseScenario(text, "s.yaml");
  EXPECT_FALSE(r.ok()) << "parsed, but an error was expected";
  return r.ok() ? Error{} : r.error();
}

}  // namespace kiln::testing
