#include "AppPaths.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QStringList>

namespace strata::ui {

QString findExampleProject(const QString& name) {
  const QString app_dir = QCoreApplication::applicationDirPath();
  const QStringList candidates = {
      app_dir + "/../share/strata/examples/" + name,  // relocatable install (cmake --install --prefix)
      QStringLiteral(STRATA_INSTALL_DATADIR) + "/examples/" + name,
      QStringLiteral(STRATA_SOURCE_EXAMPLES) + "/" + name,
  };
  for (const QString& c : candidates)
    if (QFileInfo::exists(c)) return QFileInfo(c).absoluteFilePath();
  return {};
}

QString findDashboardGuide() {
  const QString app_dir = QCoreApplication::applicationDirPath();
  for (const QString& c : {app_dir + "/../share/doc/strata/docs/dashboard.md",
                           QStringLiteral(STRATA_INSTALL_DOCDIR) + "/docs/dashboard.md",
                           QStringLiteral(STRATA_SOURCE_DOCS) + "/dashboard.md"})
    if (QFileInfo::exists(c)) return QFileInfo(c).absoluteFilePath();
  return {};
}

QString strataVersion() { return QStringLiteral(STRATA_VERSION); }

}  // namespace strata::ui
