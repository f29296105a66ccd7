#include "RecentFiles.h"

#include <QFileInfo>
#include <QMenu>
#include <QSettings>

namespace strata::ui {

RecentFiles::RecentFiles(QObject* parent) : QObject(parent) {}

QStringList RecentFiles::files() const { return QSettings().value("recentProjects").toStringList(); }

void RecentFiles::add(const QString& path) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  QStringList list = files();
  list.removeAll(abs);
  list.prepend(abs);
  while (list.size() > kMax) list.removeLast();
  QSettings().setValue("recentProjects", list);
}

void RecentFiles::fillMenu(QMenu* menu) {
  menu->clear();
  const QStringList list = files();
  for (const QString& path : list) {
    QAction* a = menu->addAction(QFileInfo(path).fileName(), this, [this, path] { Q_EMIT openRequested(path); });
    a->setToolTip(path);
    a->setEnabled(QFileInfo::exists(path));
  }
  if (list.isEmpty()) menu->addAction(tr("(none)"))->setEnabled(false);
}

}  // namespace strata::ui
