#pragma once
#include <QString>

class QWidget;

namespace strata::ui {

// Every question and error the window puts to the user goes through this,
// so tests can answer without a modal dialog blocking the event loop.
class MessagePresenter {
public:
  enum class Choice { Save, Discard, Cancel };
  virtual ~MessagePresenter() = default;
  virtual void error(QWidget* parent, const QString& title, const QString& message) = 0;
  // "Save changes to X?" before they would be lost.
  virtual Choice askSaveChanges(QWidget* parent, const QString& project) = 0;
  // A file to write (export). Empty = cancelled. Not pure, so presenters
  // written before exports existed keep working; tests override it.
  virtual QString saveFileName(QWidget* parent, const QString& title, const QString& suggested, const QString& filter);
  // A file to read (a trace). Empty = cancelled. Not pure, as saveFileName.
  virtual QString openFileName(QWidget* parent, const QString& title, const QString& directory, const QString& filter);
};

// The real thing: QMessageBox.
class DialogPresenter final : public MessagePresenter {
public:
  void error(QWidget* parent, const QString& title, const QString& message) override;
  Choice askSaveChanges(QWidget* parent, const QString& project) override;
};

}  // namespace strata::ui
