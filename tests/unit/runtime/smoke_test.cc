#include <gtest/gtest.h>
#include "runtime/extension_points.h"
TEST(ExtensionPoints, TableIsConsistent) {
  EXPECT_EQ(kiln::FindExtensionPoint("job_order")->id, kiln::ExtensionPoint::JobOrder);
}
