// strata: the dashboard. `strata PROJECT.strata` opens a project; with no
// argument the Fashion-MNIST example opens as a new, unsaved project (the
// installed copy is read-only, and runs must not land inside the install).
#include <QApplication>
#include <QCommandLineParser>

#include "AppPaths.h"
#include "MainWindow.h"


int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("Strata");
  QApplication::setOrganizationName("Strata");
  QApplication::setApplicationVersion(strata::ui::strataVersion());
  QApplication::setDesktopFileName("strata");

  QCommandLineParser parser;
  parser.setApplicationDescription("Distributed neural-network training dashboard");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("project", "A .strata project file to open.");
  parser.process(app);

  strata::ui::MainWindow window;
  const QStringList args = parser.positionalArguments();
  if (!args.isEmpty()) {
    window.openProject(args.front());  // a broken file shows its problems; the window still opens
  } else {
    const QString example = strata::ui::findExampleProject("fashion-mlp.strata");
    if (!example.isEmpty()) window.openTemplate(example);
  }
  window.show();
  return app.exec();
}
