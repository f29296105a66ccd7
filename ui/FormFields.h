#pragma once
// The settings panels' field widgets, made one way: named (tests and
// screenshots find them by name), with their ranges.
#include <QDoubleValidator>
#include <QLineEdit>
#include <QSpinBox>

namespace strata::ui {

inline QSpinBox* int_field(int lo, int hi, const char* name, QWidget* parent = nullptr) {
  auto* s = new QSpinBox(parent);
  s->setRange(lo, hi);
  s->setObjectName(name);
  return s;
}

// A non-negative number as text, so 1e-4 and 0.0003 both read naturally.
inline QLineEdit* number_field(const char* name, QWidget* parent = nullptr) {
  auto* e = new QLineEdit(parent);
  auto* v = new QDoubleValidator(0.0, 1e6, 12, e);
  v->setNotation(QDoubleValidator::ScientificNotation);
  e->setValidator(v);
  e->setObjectName(name);
  return e;
}

}  // namespace strata::ui
