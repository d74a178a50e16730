package httpbind

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzFillURL: any template and input either fail with a coded error or
// give a URL whose host is the template's own.
func FuzzFillURL(f *testing.F) {
	f.Add("http://127.0.0.1:8080/api/{id}/x?q={q}&fixed=1", `{"id":"a/b?c","q":["x","y"],"z":1}`)
	f.Add("http://h/{a}{b}", `{"a":1,"b":true}`)
	f.Add("http://h/{", `{}`)
	f.Add("http://{h}/", `{"h":"evil"}`)
	f.Fuzz(func(t *testing.T, tmpl, input string) {
		fields, err := decodeObject([]byte(input))
		if err != nil {
			return
		}
		out, err := fillURL(tmpl, fields)
		if err != nil {
			return
		}
		want, err1 := url.Parse(strings.NewReplacer("{", "", "}", "").Replace(tmpl))
		got, err2 := url.Parse(out)
		if err1 == nil && err2 == nil && strings.Contains(tmpl, "://") && got.Host != want.Host {
			t.Fatalf("template %q with %s reached host %q", tmpl, input, got.Host)
		}
	})
}
