package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// TestOpenAPIMatchesRoutes fails when the router and the document disagree
// on a path, a method or the required permission — in both directions.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	if err := ValidateOpenAPI(context.Background()); err != nil {
		t.Fatalf("document invalid: %v", err)
	}
	doc, _ := OpenAPI()
	s := New(Deps{})
	inRouter := map[string]string{}
	for _, r := range s.Routes() {
		inRouter[r.Method+" "+r.OpenAPIPath()] = r.Access.String()
	}
	inDoc := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			perm, _ := op.Extensions["x-permission"].(string)
			inDoc[strings.ToUpper(method)+" "+path] = perm
		}
	}
	var problems []string
	for k, perm := range inRouter {
		docPerm, ok := inDoc[k]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("route %s (%s) missing from the OpenAPI document", k, perm))
		case docPerm != perm:
			problems = append(problems, fmt.Sprintf("route %s: router needs %q, document says %q", k, perm, docPerm))
		}
	}
	for k := range inDoc {
		if _, ok := inRouter[k]; !ok {
			problems = append(problems, fmt.Sprintf("document has %s but the router does not", k))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		t.Fatalf("%d mismatches:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	if len(inRouter) == 0 || inRouter[http.MethodGet+" /api/v1/health"] != "public" {
		t.Fatal("route table looks empty")
	}
}
