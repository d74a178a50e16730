package panelspec

// Field builds one FormField for Builder.Form:
//
//	panel.TextField("title", "Title").Required().Length(1, 200)
//	panel.SelectField("priority", "Priority", panel.Opt("low", "Low"), panel.Opt("high", "High"))
//
// Methods return a modified copy, so a Field value can be reused as a
// template.
type Field struct{ f FormField }

// TextField is a single-line text field at path.
func TextField(path, label string) Field {
	return Field{FormField{Path: path, Label: label, Kind: FieldText}}
}

// NumberField is a number field at path.
func NumberField(path, label string) Field {
	return Field{FormField{Path: path, Label: label, Kind: FieldNumber}}
}

// SelectField is a choice among options.
func SelectField(path, label string, options ...Option) Field {
	return Field{FormField{Path: path, Label: label, Kind: FieldSelect, Options: options}}
}

// CheckboxField is a boolean field.
func CheckboxField(path, label string) Field {
	return Field{FormField{Path: path, Label: label, Kind: FieldCheckbox}}
}

// DateField is a calendar date (YYYY-MM-DD).
func DateField(path, label string) Field {
	return Field{FormField{Path: path, Label: label, Kind: FieldDate}}
}

// Opt is a select option.
func Opt(value any, label string) Option { return Option{Value: value, Label: label} }

// Required marks the field as required.
func (f Field) Required() Field { f.f.Required = true; return f }

// ReadOnly shows the value without letting anyone edit it.
func (f Field) ReadOnly() Field { f.f.ReadOnly = true; return f }

// Help sets the help text under the field.
func (f Field) Help(text string) Field { f.f.Help = text; return f }

// Placeholder sets the placeholder text.
func (f Field) Placeholder(text string) Field { f.f.Placeholder = text; return f }

// Multiline makes a text field a text area.
func (f Field) Multiline() Field { f.f.Multiline = true; return f }

// Length bounds a text field's length in characters (0 max: unbounded).
func (f Field) Length(minLen, maxLen int) Field {
	f.f.MinLength = &minLen
	if maxLen > 0 {
		f.f.MaxLength = &maxLen
	} else {
		f.f.MaxLength = nil
	}
	return f
}

// Range bounds a number field.
func (f Field) Range(lo, hi float64) Field { f.f.Min, f.f.Max = &lo, &hi; return f }

// Step sets a number field's increment.
func (f Field) Step(step float64) Field { f.f.Step = &step; return f }

// FormField returns the field as it appears in the spec.
func (f Field) FormField() FormField { return f.f }
