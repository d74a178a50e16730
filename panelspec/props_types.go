package panelspec

// Typed props of the built-in node types, for the Builder and for Go code
// that reads specs. Their JSON is exactly what the catalog schemas in
// schemas/*.json accept.

// Props is the typed props of one node type.
type Props interface {
	NodeType() string
}

// BodyProps are the props of a panel-body, the usual root.
type BodyProps struct {
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// StackProps lay children out vertically. Gap is none, sm, md or lg.
type StackProps struct {
	Gap string `json:"gap,omitempty"`
}

// RowProps lay children out side by side.
type RowProps struct {
	Gap     string `json:"gap,omitempty"`
	Align   string `json:"align,omitempty"`
	Justify string `json:"justify,omitempty"`
	Wrap    bool   `json:"wrap,omitempty"`
}

// ColumnProps are one cell of a row. Width is auto, 1/4, 1/3, 1/2, 2/3,
// 3/4 or full.
type ColumnProps struct {
	Gap   string `json:"gap,omitempty"`
	Width string `json:"width,omitempty"`
}

// HeadingProps: Level 1 to 6; 0 leaves it to the renderer (2).
type HeadingProps struct {
	Text  string `json:"text"`
	Level int    `json:"level,omitempty"`
}

// TextProps: plain text, never HTML.
type TextProps struct {
	Text string `json:"text"`
	Tone string `json:"tone,omitempty"`
	Size string `json:"size,omitempty"`
}

// LinkProps: Href is http(s), mailto or relative.
type LinkProps struct {
	Href     string `json:"href"`
	Label    string `json:"label"`
	External bool   `json:"external,omitempty"`
}

// ImageProps: Src is http(s), relative or a raster data: URL.
type ImageProps struct {
	Src    string `json:"src"`
	Alt    string `json:"alt"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
}

// ButtonProps: Action is the id of a declared action.
type ButtonProps struct {
	Label    string `json:"label"`
	Action   string `json:"action"`
	Variant  string `json:"variant,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
}

// CalloutProps: Tone is info, success, warning or danger.
type CalloutProps struct {
	Text  string `json:"text"`
	Title string `json:"title,omitempty"`
	Tone  string `json:"tone,omitempty"`
}

// ListProps: inline Items, or Source with Field naming the record field.
type ListProps struct {
	Items     []string `json:"items,omitempty"`
	Source    string   `json:"source,omitempty"`
	Field     string   `json:"field,omitempty"`
	Ordered   bool     `json:"ordered,omitempty"`
	EmptyText string   `json:"emptyText,omitempty"`
}

// TableProps: inline Rows, or Source.
type TableProps struct {
	Columns   []Column         `json:"columns"`
	Rows      []map[string]any `json:"rows,omitempty"`
	Source    string           `json:"source,omitempty"`
	Caption   string           `json:"caption,omitempty"`
	EmptyText string           `json:"emptyText,omitempty"`
}

// Column of a table. Kind is text, number, date, link or badge; a link
// column takes its URL from the record field HrefKey (default Key).
type Column struct {
	Key     string `json:"key"`
	Label   string `json:"label"`
	Kind    string `json:"kind,omitempty"`
	HrefKey string `json:"hrefKey,omitempty"`
}

// TabsProps: one label per child, in order.
type TabsProps struct {
	Labels   []string `json:"labels"`
	Selected int      `json:"selected,omitempty"`
}

// FormProps are the props of a field-form editing the source Bind.
type FormProps struct {
	Bind        string      `json:"bind"`
	Fields      []FormField `json:"fields,omitempty"` // empty: taken from the bound source's record schema
	Submit      string      `json:"submit,omitempty"`
	SubmitLabel string      `json:"submitLabel,omitempty"`
}

// Field kinds of a field-form.
const (
	FieldText     = "text"
	FieldNumber   = "number"
	FieldSelect   = "select"
	FieldCheckbox = "checkbox"
	FieldDate     = "date"
)

// FormField is one field of a field-form: a dot path into the bound record,
// a label, a kind and the constraints that apply to the kind.
type FormField struct {
	Path        string   `json:"path"`
	Label       string   `json:"label"`
	Kind        string   `json:"kind"`
	Required    bool     `json:"required,omitempty"`
	ReadOnly    bool     `json:"readOnly,omitempty"`
	Help        string   `json:"help,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Multiline   bool     `json:"multiline,omitempty"`
	MinLength   *int     `json:"minLength,omitempty"`
	MaxLength   *int     `json:"maxLength,omitempty"`
	Min         *float64 `json:"min,omitempty"`
	Max         *float64 `json:"max,omitempty"`
	Step        *float64 `json:"step,omitempty"`
	Options     []Option `json:"options,omitempty"`
}

// Option of a select field. Value is a string, number or boolean.
type Option struct {
	Value any    `json:"value"`
	Label string `json:"label"`
}

func (BodyProps) NodeType() string    { return TypePanelBody }
func (StackProps) NodeType() string   { return TypeStack }
func (RowProps) NodeType() string     { return TypeRow }
func (ColumnProps) NodeType() string  { return TypeColumn }
func (HeadingProps) NodeType() string { return TypeHeading }
func (TextProps) NodeType() string    { return TypeText }
func (LinkProps) NodeType() string    { return TypeLink }
func (ImageProps) NodeType() string   { return TypeImage }
func (ButtonProps) NodeType() string  { return TypeButton }
func (CalloutProps) NodeType() string { return TypeCallout }
func (ListProps) NodeType() string    { return TypeList }
func (TableProps) NodeType() string   { return TypeTable }
func (TabsProps) NodeType() string    { return TypeTabs }
func (FormProps) NodeType() string    { return TypeFieldForm }
