#include "MessagePresenter.h"

#include <QFileDialog>
#include <QMessageBox>

namespace strata::ui {

void DialogPresenter::error(QWidget* parent, const QString& title, const QString& message) {
  QMessageBox box(QMessageBox::Critical, title, message, QMessageBox::Ok, parent);
  // The engine's messages list every problem with its JSON path: let the
  // user copy them.
  box.setTextInteractionFlags(Qt::TextSelectableByMouse);
  box.exec();
}

QString MessagePresenter::saveFileName(QWidget* parent, const QString& title, const QString& suggested, const QString& filter) {
  return QFileDialog::getSaveFileName(parent, title, suggested, filter);
}

QString MessagePresenter::openFileName(QWidget* parent, const QString& title, const QString& directory,
                                       const QString& filter) {
  return QFileDialog::getOpenFileName(parent, title, directory, filter);
}

MessagePresenter::Choice DialogPresenter::askSaveChanges(QWidget* parent, const QString& project) {
  const auto answer = QMessageBox::warning(parent, QObject::tr("Unsaved changes"),
                                           QObject::tr("Save the changes to “%1” first?").arg(project),
                                           QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Save) return Choice::Save;
  if (answer == QMessageBox::Discard) return Choice::Discard;
  return Choice::Cancel;
}

}  // namespace strata::ui
