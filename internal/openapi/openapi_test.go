package openapi_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/openapi"
	"github.com/switchboardhq/switchboard/internal/schema"
)

func importFile(t *testing.T, file string, opts openapi.Options) *openapi.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "openapi", file))
	if err != nil {
		t.Fatal(err)
	}
	res, err := openapi.Import(context.Background(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func byName(res *openapi.Result) map[string]switchboard.Tool {
	m := map[string]switchboard.Tool{}
	for _, t := range res.Tools {
		m[t.Name] = t
	}
	return m
}

func skipped(res *openapi.Result) map[string]string {
	m := map[string]string{}
	for _, s := range res.Skipped {
		m[s.Method+" "+s.Path] = s.Reason
	}
	return m
}

// TestPetstore3 imports the Swagger Petstore (OpenAPI 3.0): tags as
// namespaces, $refs, query parameters on a POST, a header parameter, an
// octet-stream upload and an array body.
func TestPetstore3(t *testing.T) {
	res := importFile(t, "petstore3.yaml", openapi.Options{BaseURL: "http://127.0.0.1:8080/api/v3/"})
	tools := byName(res)
	want := []string{
		"pet.add_pet", "pet.delete_pet", "pet.find_pets_by_status", "pet.find_pets_by_tags", "pet.get_pet_by_id",
		"pet.update_pet", "pet.update_pet_with_form", "store.delete_order", "store.get_inventory",
		"store.get_order_by_id", "store.place_order", "user.create_user", "user.delete_user",
		"user.get_user_by_name", "user.login_user", "user.logout_user", "user.update_user",
	}
	got := make([]string, 0, len(tools))
	for n := range tools {
		got = append(got, n)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("tools:\n got %v\nwant %v", got, want)
	}
	sk := skipped(res)
	if r := sk["POST /pet/{petId}/uploadImage"]; !strings.Contains(r, "application/octet-stream") {
		t.Errorf("upload skip reason: %q", r)
	}
	if r := sk["POST /user/createWithList"]; !strings.Contains(r, "array") {
		t.Errorf("array body skip reason: %q", r)
	}
	if len(sk) != 2 {
		t.Errorf("skipped %v", sk)
	}

	add := tools["pet.add_pet"]
	if add.Class != switchboard.ClassMutate || add.Approval != switchboard.ApprovalNone ||
		add.Binding.HTTP.Method != "POST" || add.Binding.HTTP.URL != "http://127.0.0.1:8080/api/v3/pet" ||
		add.Summary != "Add a new pet to the store" {
		t.Errorf("add_pet: %+v %+v", add, add.Binding.HTTP)
	}
	// The Pet $ref and its nested Category/Tag refs are inlined; required
	// comes from the required body.
	in := mustSchema(t, add.InputSchema)
	if err := in.Validate(json.RawMessage(`{"name":"Rex","photoUrls":["u"],"category":{"id":1,"name":"Dogs"},"tags":[{"id":1,"name":"t"}],"status":"sold"}`)); err != nil {
		t.Errorf("a valid pet fails: %v", err)
	}
	if err := in.Validate(json.RawMessage(`{"name":"Rex"}`)); err == nil || !strings.Contains(err.Error(), "photoUrls") {
		t.Errorf("missing photoUrls: %v", err)
	}
	if err := in.Validate(json.RawMessage(`{"name":"Rex","photoUrls":[],"status":"lost"}`)); err == nil || !strings.Contains(err.Error(), "/status") {
		t.Errorf("bad enum: %v", err)
	}
	if strings.Contains(string(add.InputSchema), "$ref") || strings.Contains(string(add.InputSchema), "xml") {
		t.Errorf("schema keeps OpenAPI-only parts: %s", add.InputSchema)
	}

	form := tools["pet.update_pet_with_form"]
	if form.Binding.HTTP.URL != "http://127.0.0.1:8080/api/v3/pet/{petId}?name={name}&status={status}" {
		t.Errorf("query parameters of a POST: %s", form.Binding.HTTP.URL)
	}
	del := tools["pet.delete_pet"]
	if del.Approval != switchboard.ApprovalHITL || del.Class != switchboard.ClassMutate {
		t.Errorf("delete: %s %s", del.Class, del.Approval)
	}
	if tools["pet.get_pet_by_id"].Class != switchboard.ClassRead {
		t.Errorf("GET is not read")
	}
	notes := strings.Join(noteTexts(res), "\n")
	for _, w := range []string{`optional header parameter "api_key"`, "petstore_auth", "--header api_key=env:VAR", `body property "username"`} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
}

// TestPetstoreExpanded imports the OAI example: no tags (namespace from the
// path), allOf, an operationId with spaces, a document-level server.
func TestPetstoreExpanded(t *testing.T) {
	res := importFile(t, "petstore-expanded.yaml", openapi.Options{})
	if res.BaseURL != "http://petstore.swagger.io/api" {
		t.Errorf("base URL from servers: %s", res.BaseURL)
	}
	tools := byName(res)
	for _, n := range []string{"pets.find_pets", "pets.add_pet", "pets.find_pet_by_id", "pets.delete_pet"} {
		if _, ok := tools[n]; !ok {
			t.Errorf("missing %s in %v", n, res.Tools)
		}
	}
	find := mustSchema(t, tools["pets.find_pets"].InputSchema)
	if err := find.Validate(json.RawMessage(`{"tags":["a","b"],"limit":5}`)); err != nil {
		t.Error(err)
	}
	if err := find.Validate(json.RawMessage(`{"limit":"five"}`)); err == nil {
		t.Error("a string limit passes")
	}
	if err := find.Validate(json.RawMessage(`{"limt":5}`)); err == nil {
		t.Error("an unknown field passes")
	}
	// Namespaced by flag instead.
	res = importFile(t, "petstore-expanded.yaml", openapi.Options{Namespace: "Shop", BaseURL: "http://127.0.0.1:1"})
	if _, ok := byName(res)["shop.add_pet"]; !ok {
		t.Errorf("--namespace not applied: %v", res.Tools)
	}
}

// TestUSPTO imports a document with server variables and a form body.
func TestUSPTO(t *testing.T) {
	res := importFile(t, "uspto.yaml", openapi.Options{})
	if res.BaseURL != "https://developer.uspto.gov/ds-api" {
		t.Errorf("server variables not applied: %s", res.BaseURL)
	}
	tools := byName(res)
	fields, ok := tools["metadata.list_searchable_fields"]
	if !ok || fields.Binding.HTTP.URL != "https://developer.uspto.gov/ds-api/{dataset}/{version}/fields" {
		t.Fatalf("tools %v", res.Tools)
	}
	if _, ok := tools["metadata.list_data_sets"]; !ok {
		t.Error("missing list_data_sets")
	}
	if r := skipped(res)["POST /{dataset}/{version}/records"]; !strings.Contains(r, "x-www-form-urlencoded") {
		t.Errorf("form body skip: %q", r)
	}
}

const recursive = `
openapi: 3.0.3
info: {title: Tree, version: "1"}
paths:
  /nodes:
    post:
      operationId: createNode
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Node'}
      responses: {'200': {description: ok}}
  /nodes/{id}:
    get:
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: session, in: cookie, required: true, schema: {type: string}}
      responses: {'200': {description: ok}}
    put:
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: filter, in: query, schema: {type: object}}
        - {name: X-Trace, in: header, required: true, schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema:
              oneOf: [{$ref: '#/components/schemas/Node'}, {type: string}]
      responses: {'200': {description: ok}}
    options:
      responses: {'200': {description: ok}}
  /search:
    get:
      parameters:
        - {name: q, in: query, schema: {type: string, nullable: true, minimum: 1, exclusiveMinimum: true}}
        - {name: deep, in: query, style: deepObject, schema: {type: string}}
      responses: {'200': {description: ok}}
components:
  schemas:
    Node:
      type: object
      required: [name]
      properties:
        id: {type: string, readOnly: true}
        name: {type: string}
        children:
          type: array
          items: {$ref: '#/components/schemas/Node'}
`

// TestUnsupportedConstructs covers recursion, cookie and header
// parameters, object query parameters, oneOf bodies and odd methods.
func TestUnsupportedConstructs(t *testing.T) {
	res, err := openapi.Import(context.Background(), []byte(recursive), openapi.Options{BaseURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	tools := byName(res)
	create, ok := tools["nodes.create_node"]
	if !ok {
		t.Fatalf("tools %v skipped %v", res.Tools, res.Skipped)
	}
	s := string(create.InputSchema)
	if strings.Contains(s, `"id"`) {
		t.Errorf("a readOnly property is asked for: %s", s)
	}
	if !strings.Contains(s, "recursive Node") {
		t.Errorf("recursion not cut: %s", s)
	}
	if err := mustSchema(t, create.InputSchema).Validate(json.RawMessage(`{"name":"a","children":[{"name":"b","children":[{"anything":1}]}]}`)); err != nil {
		t.Errorf("nested children: %v", err)
	}
	sk := skipped(res)
	for key, want := range map[string]string{
		"GET /nodes/{id}":     "cookie",
		"PUT /nodes/{id}":     "header parameter",
		"OPTIONS /nodes/{id}": "OPTIONS",
	} {
		if !strings.Contains(sk[key], want) {
			t.Errorf("%s: skip reason %q lacks %q", key, sk[key], want)
		}
	}
	search, ok := tools["search.get_search"]
	if !ok {
		t.Fatalf("path-derived name missing: %v", res.Tools)
	}
	if !strings.Contains(string(search.InputSchema), `"exclusiveMinimum":1`) || !strings.Contains(string(search.InputSchema), `"null"`) {
		t.Errorf("3.0 keywords not translated: %s", search.InputSchema)
	}
	notes := strings.Join(noteTexts(res), "\n")
	if !strings.Contains(notes, "Node is recursive") || !strings.Contains(notes, `"deep" left out`) {
		t.Errorf("notes:\n%s", notes)
	}

	// With the header configured, the PUT fails on its oneOf body instead.
	res, err = openapi.Import(context.Background(), []byte(recursive), openapi.Options{
		BaseURL: "http://127.0.0.1:9", Headers: map[string]switchboard.HeaderValue{"x-trace": {Value: "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := skipped(res)["PUT /nodes/{id}"]; !strings.Contains(r, "oneOf") {
		t.Errorf("oneOf body: %q", r)
	}
}

const swagger2 = `{"swagger":"2.0","info":{"title":"Old","version":"1"},"host":"api.example.com","basePath":"/v1","schemes":["https"],
"paths":{"/items/{id}":{"get":{"operationId":"getItem","tags":["items"],"parameters":[{"name":"id","in":"path","required":true,"type":"integer"}],"responses":{"200":{"description":"ok"}}}}}}`

func TestDocumentErrors(t *testing.T) {
	res, err := openapi.Import(context.Background(), []byte(swagger2), openapi.Options{})
	if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "items.get_item" || res.BaseURL != "https://api.example.com/v1" {
		t.Fatalf("swagger 2.0: %v %+v", err, res)
	}
	for _, tc := range []struct{ doc, want string }{
		{"openapi: [", "YAML"},
		{"{}", "not an OpenAPI document"},
		{"title: nothing\n", "not an OpenAPI document"},
		{"openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    get:\n      responses: {'200': {$ref: 'other.yaml#/r'}}\n", "OpenAPI"},
	} {
		_, err := openapi.Import(context.Background(), []byte(tc.doc), openapi.Options{BaseURL: "http://x"})
		if switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v", tc.doc, err)
		}
	}
	// A relative server needs --base-url.
	_, err = openapi.Import(context.Background(), mustRead(t, "petstore3.yaml"), openapi.Options{})
	if switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), "--base-url") {
		t.Errorf("relative server: %v", err)
	}
}

func mustRead(t *testing.T, file string) []byte {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "openapi", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustSchema(t *testing.T, raw json.RawMessage) *schema.Schema {
	t.Helper()
	s, err := schema.Compile(raw)
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return s
}

func noteTexts(res *openapi.Result) []string {
	var out []string
	for _, n := range res.Notes {
		out = append(out, n.Tool+": "+n.Message)
	}
	return out
}
