package httpapi

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/version"
)

// The OpenAPI 3.0 document is kept as one fragment per area
// (openapi/<area>.yaml) and merged at load time into a single document.
// Every operation carries x-permission ("public", "login" or a permission
// code); TestOpenAPIMatchesRoutes fails when the router and the document
// disagree on a path, a method or a permission.
//
//go:embed openapi/*.yaml
var openapiFS embed.FS

// What a running server keeps of the document: the JSON it serves and the
// nullable index bindJSON consults. The parsed document (~9 MiB of heap
// for ~250 operations) is not kept: a heap profile of an idle lcm-api
// after a fleet-wide run found it to be a third of the live heap
// (docs/benchmarks.md "What an idle lcm-api holds").
var (
	openapiOnce sync.Once
	openapiJSON []byte
	nullableOps map[string]map[string]bool
	openapiErr  error
)

// OpenAPI parses and returns the merged document. Each call parses it
// anew (tests and validation); the server itself uses served().
func OpenAPI() (*openapi3.T, error) { return loadOpenAPI() }

// served loads the document once and keeps only its JSON and the
// nullable index.
func served() ([]byte, error) {
	openapiOnce.Do(func() {
		doc, err := loadOpenAPI()
		if err != nil {
			openapiErr = err
			return
		}
		if openapiJSON, err = json.Marshal(doc); err != nil {
			openapiErr = err
			return
		}
		nullableOps = nullableIndex(doc)
	})
	return openapiJSON, openapiErr
}

func loadOpenAPI() (*openapi3.T, error) {
	names, err := fs.Glob(openapiFS, "openapi/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names) // base.yaml sorts first among what we ship
	loader := openapi3.NewLoader()
	var doc *openapi3.T
	for _, name := range names {
		data, err := openapiFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		frag, err := loader.LoadFromData(data)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s: %w", name, err)
		}
		if doc == nil {
			doc = frag
			continue
		}
		if err := merge(doc, frag, name); err != nil {
			return nil, err
		}
	}
	if doc == nil {
		return nil, fmt.Errorf("openapi: no fragments")
	}
	doc.Info.Version = version.Get().Version
	return doc, nil
}

func merge(doc, frag *openapi3.T, name string) error {
	if doc.Paths == nil {
		doc.Paths = openapi3.NewPaths()
	}
	for path, item := range frag.Paths.Map() {
		if doc.Paths.Value(path) != nil {
			return fmt.Errorf("openapi: %s redefines path %s", name, path)
		}
		doc.Paths.Set(path, item)
	}
	if frag.Components != nil {
		if doc.Components == nil {
			doc.Components = &openapi3.Components{}
		}
		if doc.Components.Schemas == nil {
			doc.Components.Schemas = openapi3.Schemas{}
		}
		for k, v := range frag.Components.Schemas {
			if _, dup := doc.Components.Schemas[k]; dup {
				return fmt.Errorf("openapi: %s redefines schema %s", name, k)
			}
			doc.Components.Schemas[k] = v
		}
		if doc.Components.Parameters == nil {
			doc.Components.Parameters = openapi3.ParametersMap{}
		}
		for k, v := range frag.Components.Parameters {
			doc.Components.Parameters[k] = v
		}
		if doc.Components.Responses == nil {
			doc.Components.Responses = openapi3.ResponseBodies{}
		}
		for k, v := range frag.Components.Responses {
			doc.Components.Responses[k] = v
		}
	}
	doc.Tags = append(doc.Tags, frag.Tags...)
	return nil
}

// ValidateOpenAPI checks the merged document against the OpenAPI 3.0 schema.
func ValidateOpenAPI(ctx context.Context) error {
	doc, err := OpenAPI()
	if err != nil {
		return err
	}
	return doc.Validate(ctx)
}

func (s *Server) getOpenAPI(c *gin.Context) {
	data, err := served()
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Data(http.StatusOK, "application/json", data)
}

// documentedNullable returns, for the operation a request matched (gin's
// route path), its JSON body's top-level properties and whether each may
// be null; nil when the document describes no such body.
func documentedNullable(method, ginPath string) map[string]bool {
	if _, err := served(); err != nil {
		return nil
	}
	return nullableOps[method+" "+Route{Path: ginPath}.OpenAPIPath()]
}

// nullableIndex maps "METHOD /path" to the JSON body's top-level
// properties and whether each may be null.
func nullableIndex(doc *openapi3.T) map[string]map[string]bool {
	ops := map[string]map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for m, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			mt := op.RequestBody.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil || len(mt.Schema.Value.Properties) == 0 {
				continue
			}
			props := map[string]bool{}
			for name, p := range mt.Schema.Value.Properties {
				props[name] = p.Value == nil || p.Value.Nullable || p.Value.Type.IncludesNull()
			}
			ops[strings.ToUpper(m)+" "+path] = props
		}
	}
	return ops
}
