#pragma once
#include <QObject>
#include <QStringList>

class QMenu;

namespace strata::ui {

// The most recently opened or saved projects, kept in QSettings and shown
// as File > Open Recent.
class RecentFiles : public QObject {
  Q_OBJECT
public:
  explicit RecentFiles(QObject* parent = nullptr);
  void add(const QString& path);
  QStringList files() const;
  void fillMenu(QMenu* menu);

signals:
  void openRequested(const QString& path);

private:
  static constexpr int kMax = 8;
};

}  // namespace strata::ui
