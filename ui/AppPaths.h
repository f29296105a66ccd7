#pragma once
#include <QString>

namespace strata::ui {

// Where the example projects are: beside an installed binary
// (<prefix>/share/strata/examples), the configured install prefix, or the
// source tree when run from a build folder. Empty if none has `name`.
QString findExampleProject(const QString& name);
QString strataVersion();
// The dashboard's guide (docs/dashboard.md), looked for the same way:
// installed under <prefix>/share/doc/strata/docs, or the source tree.
QString findDashboardGuide();

}  // namespace strata::ui
