#include "AppPaths.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QStringList>

namespace strata::ui {

namespace {
// The first of the places that exists, made absolute; empty if none.
QString first_existing(const QStringList& candidates) {
  for (const QString& c : candidates)
    if (QFileInfo::exists(c)) return QFileInfo(c).absoluteFilePath();
  return {};
}
}  // namespace

QString findExampleProject(const QString& name) {
  const QString app_dir = QCoreApplication::applicationDirPath();
  return first_existing({
      app_dir + "/../share/strata/examples/" + name,  // relocatable install (cmake --install --prefix)
      QStringLiteral(STRATA_INSTALL_DATADIR) + "/examples/" + name,
      QStringLiteral(STRATA_SOURCE_EXAMPLES) + "/" + name,
  });
}

QString findDashboardGuide() {
  const QString app_dir = QCoreApplication::applicationDirPath();
  return first_existing({app_dir + "/../share/doc/strata/docs/dashboard.md",
                         QStringLiteral(STRATA_INSTALL_DOCDIR) + "/docs/dashboard.md",
                         QStringLiteral(STRATA_SOURCE_DOCS) + "/dashboard.md"});
}

QString strataVersion() { return QStringLiteral(STRATA_VERSION); }

}  // namespace strata::ui
