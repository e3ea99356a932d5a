package main

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// jsonFile says how writeJSON writes one of the agent's files.
type jsonFile struct {
	perm    os.FileMode // the file's mode
	dirPerm os.FileMode // the mode of its directory when writeJSON creates it
	pattern string      // the temp file's name in the directory (os.CreateTemp)
	sync    bool        // fsync before the rename: the file must survive a crash
}

// writeJSON writes v as indented JSON to path atomically: a temp file in
// the same directory with the final mode, renamed over path, so a reader
// sees the old file or the new one, never a part.
func (o jsonFile) writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, o.dirPerm); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, o.pattern)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(o.perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if o.sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
