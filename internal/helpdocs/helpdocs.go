// Package helpdocs serves the operator docs embedded from docs/ as help:
// a list with titles and one page by its slug (the file name without .md).
// Slugs are validated before any lookup: lowercase letters, digits and
// inner hyphens only, so no path — "..", "/", "\" or a NUL — ever reaches
// the file system (which is the embedded one anyway).
package helpdocs

import (
	"bufio"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/lcmproject/lcm/docs"
	"github.com/lcmproject/lcm/internal/domain"
)

// MaxSlug bounds a slug's length.
const MaxSlug = 64

// Doc is one entry of the list.
type Doc struct {
	Slug  string `json:"slug"`
	Title string `json:"title"`
}

// Page is one document.
type Page struct {
	Slug     string `json:"slug"`
	Title    string `json:"title"`
	Markdown string `json:"markdown"`
}

// Library is a set of markdown documents.
type Library struct {
	fsys fs.FS
	once sync.Once
	list []Doc
}

// Embedded is the library of the docs compiled into the binary.
var Embedded = New(docs.FS)

// New reads the *.md files at the top of fsys.
func New(fsys fs.FS) *Library { return &Library{fsys: fsys} }

// ValidSlug reports whether s is a well-formed slug.
func ValidSlug(s string) bool {
	if s == "" || len(s) > MaxSlug || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Title is the text of the first "# " heading, or fallback.
func Title(markdown, fallback string) string {
	sc := bufio.NewScanner(strings.NewReader(markdown))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	fence := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		if !fence && strings.HasPrefix(line, "# ") {
			if t := strings.TrimSpace(line[2:]); t != "" {
				return t
			}
		}
	}
	return fallback
}

// List returns every document with its title, sorted by title.
func (l *Library) List() []Doc {
	l.once.Do(func() {
		names, _ := fs.Glob(l.fsys, "*.md")
		for _, n := range names {
			slug := strings.TrimSuffix(n, ".md")
			if !ValidSlug(slug) {
				continue
			}
			b, err := fs.ReadFile(l.fsys, n)
			if err != nil {
				continue
			}
			l.list = append(l.list, Doc{Slug: slug, Title: Title(string(b), slug)})
		}
		sort.Slice(l.list, func(i, j int) bool {
			return strings.ToLower(l.list[i].Title) < strings.ToLower(l.list[j].Title)
		})
	})
	return append([]Doc(nil), l.list...)
}

// Get returns the document slug: an invalid slug is ErrInvalid
// (invalid_slug), an unknown one ErrNotFound.
func (l *Library) Get(slug string) (Page, error) {
	if !ValidSlug(slug) {
		return Page{}, domain.Invalid("invalid_slug", "a doc slug is 1-64 lowercase letters, digits and inner hyphens")
	}
	for _, d := range l.List() {
		if d.Slug == slug {
			b, err := fs.ReadFile(l.fsys, path.Clean(slug+".md"))
			if err != nil {
				return Page{}, err
			}
			return Page{Slug: slug, Title: d.Title, Markdown: string(b)}, nil
		}
	}
	return Page{}, domain.NotFound("doc")
}
