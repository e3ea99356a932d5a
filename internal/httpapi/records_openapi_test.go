package httpapi

import (
	"context"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecordsOpenAPIFragment checks the records fragment on its own: it
// loads and validates, and it lists exactly the routes of routesRecords
// with their x-permission and an x-access description.
func TestRecordsOpenAPIFragment(t *testing.T) {
	data, err := openapiFS.ReadFile("openapi/records.yaml")
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(data)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))

	srv := New(Deps{})
	var mine []Route
	for _, r := range srv.Routes() {
		if isRecordsPath(r.OpenAPIPath()) {
			mine = append(mine, r)
		}
	}
	inDoc := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			perm, _ := op.Extensions["x-permission"].(string)
			inDoc[strings.ToUpper(method)+" "+path] = perm
			access, _ := op.Extensions["x-access"].(string)
			assert.NotEmpty(t, access, "%s %s has no x-access", method, path)
			for _, p := range item.Parameters {
				assert.Equal(t, "uuid", p.Value.Schema.Value.Format, "%s parameter %s", path, p.Value.Name)
			}
		}
	}
	require.Len(t, mine, len(inDoc))
	for _, r := range mine {
		perm, ok := inDoc[r.Method+" "+r.OpenAPIPath()]
		assert.True(t, ok, "%s %s missing from records.yaml", r.Method, r.OpenAPIPath())
		assert.Equal(t, r.Access.String(), perm, "%s %s", r.Method, r.OpenAPIPath())
	}
}

func isRecordsPath(p string) bool {
	for _, prefix := range []string{"/api/v1/projects", "/api/v1/zones", "/api/v1/templates", "/api/v1/sync-groups", "/api/v1/source-hosts"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}
