package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"gorm.io/gorm/schema"

	"github.com/lcmproject/lcm/internal/secret"
)

// EncryptedColumn registers one encrypted column. The registry is the single
// list rotate-db-key walks: a column missing here would stay sealed with a
// retired key, so every `serializer:secret` field must be registered (a test
// checks this against the GORM models).
type EncryptedColumn struct {
	Table  string
	Column string
	// PK is the primary key column used to address rows during rotation.
	PK string
	// BlindColumn, when set, holds secret.BlindIndex(Table+"."+Column, value)
	// and is recomputed on rotation.
	BlindColumn string
}

// AAD is the associated data binding a ciphertext to its column.
func (c EncryptedColumn) AAD() string { return c.Table + "." + c.Column }

var (
	encMu             sync.Mutex
	encryptedRegistry = map[string]EncryptedColumn{}
)

func registerEncrypted(c EncryptedColumn) {
	encMu.Lock()
	defer encMu.Unlock()
	if _, dup := encryptedRegistry[c.AAD()]; dup {
		panic("store: encrypted column registered twice: " + c.AAD())
	}
	encryptedRegistry[c.AAD()] = c
}

// EncryptedColumns returns the registry sorted by table and column.
func EncryptedColumns() []EncryptedColumn {
	encMu.Lock()
	defer encMu.Unlock()
	out := make([]EncryptedColumn, 0, len(encryptedRegistry))
	for _, c := range encryptedRegistry {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AAD() < out[j].AAD() })
	return out
}

// errNoKeyring means an encrypted field was touched before the master key
// was resolved: a programming error, never silently stored in plaintext.
var errNoKeyring = errors.New("store: encrypted field used without a master key")

// secretSerializer encrypts string and []byte fields with AES-256-GCM.
// Tag a field `gorm:"serializer:secret;type:bytes"` and register the column.
type secretSerializer struct{}

func init() { schema.RegisterSerializer("secret", secretSerializer{}) }

func (secretSerializer) Scan(ctx context.Context, field *schema.Field, dst reflect.Value, dbValue any) error {
	fv := field.ReflectValueOf(ctx, dst)
	var raw []byte
	switch v := dbValue.(type) {
	case nil:
		fv.Set(reflect.Zero(fv.Type()))
		return nil
	case []byte:
		raw = v
	case string:
		raw = []byte(v)
	default:
		return fmt.Errorf("store: encrypted column %s: unexpected type %T", field.DBName, dbValue)
	}
	if len(raw) == 0 {
		fv.Set(reflect.Zero(fv.Type()))
		return nil
	}
	kr, ok := secret.FromContext(ctx)
	if !ok {
		return errNoKeyring
	}
	pt, err := kr.Open(raw, field.Schema.Table+"."+field.DBName)
	if err != nil {
		return fmt.Errorf("store: decrypt %s.%s: %w", field.Schema.Table, field.DBName, err)
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(string(pt))
	case reflect.Slice:
		fv.SetBytes(pt)
	default:
		return fmt.Errorf("store: encrypted field %s must be string or []byte", field.Name)
	}
	return nil
}

func (secretSerializer) Value(ctx context.Context, field *schema.Field, _ reflect.Value, fieldValue any) (any, error) {
	var pt []byte
	switch v := fieldValue.(type) {
	case string:
		pt = []byte(v)
	case []byte:
		pt = v
	case nil:
	default:
		return nil, fmt.Errorf("store: encrypted field %s must be string or []byte", field.Name)
	}
	if len(pt) == 0 {
		return nil, nil
	}
	kr, ok := secret.FromContext(ctx)
	if !ok {
		return nil, errNoKeyring
	}
	return kr.Seal(pt, field.Schema.Table+"."+field.DBName)
}

// Seal encrypts a value for a registered column outside GORM models (e.g.
// bulk inserts of console output).
func (s *Store) Seal(c EncryptedColumn, pt []byte) ([]byte, error) {
	if s.kr == nil {
		return nil, errNoKeyring
	}
	return s.kr.Seal(pt, c.AAD())
}

// Open decrypts a value of a registered column.
func (s *Store) Open(c EncryptedColumn, ct []byte) ([]byte, error) {
	if s.kr == nil {
		return nil, errNoKeyring
	}
	return s.kr.Open(ct, c.AAD())
}

// BlindIndex computes the blind index of a value for a registered column.
func (s *Store) BlindIndex(c EncryptedColumn, value string) string {
	return s.kr.BlindIndex(c.AAD(), value)
}
