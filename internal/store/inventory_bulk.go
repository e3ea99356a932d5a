package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// bulkRows is the rows per INSERT statement. Each statement carries its
// rows as ONE JSON parameter that the database expands (json_each on
// SQLite, json_populate_recordset on PostgreSQL): the SQLite driver parses
// every statement anew on each execution and binds parameters in time
// quadratic in their count, so a classic multi-row VALUES list spent most
// of the ingest parsing and binding. 5,000 rows keep a parameter near
// 1 MB.
const bulkRows = 5000

// bulkInsert writes n rows into table. row(i) returns the values of row i
// in cols order: strings, bools and integers. suffix follows the SELECT
// (for example " ON CONFLICT DO NOTHING", which both dialects accept after
// the WHERE that disambiguates it on SQLite).
func (s *Store) bulkInsert(ctx context.Context, table string, cols []string, suffix string, n int, row func(i int) []any) error {
	if n == 0 {
		return nil
	}
	var q string
	if s.dialect == Postgres {
		q = fmt.Sprintf("INSERT INTO %s (%s) SELECT %[2]s FROM json_populate_recordset(NULL::%[1]s, ?::json) WHERE true%[3]s",
			table, strings.Join(cols, ","), suffix)
	} else {
		sel := make([]string, len(cols))
		for i := range cols {
			sel[i] = fmt.Sprintf("value->>%d", i) // rows are arrays here
		}
		q = fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM json_each(?) WHERE true%s",
			table, strings.Join(cols, ","), strings.Join(sel, ","), suffix)
	}
	db := s.conn(ctx)
	var buf []byte
	for lo := 0; lo < n; lo += bulkRows {
		hi := min(lo+bulkRows, n)
		buf = append(buf[:0], '[')
		for i := lo; i < hi; i++ {
			if i > lo {
				buf = append(buf, ',')
			}
			if s.dialect == Postgres {
				buf = appendJSONObject(buf, cols, row(i))
			} else {
				buf = appendJSONArray(buf, row(i))
			}
		}
		buf = append(buf, ']')
		if err := db.Exec(q, string(buf)).Error; err != nil {
			return mapErr(err, table)
		}
	}
	return nil
}

// appendJSONArray appends [value,…] (SQLite reads positions, which is
// cheaper than looking up keys).
func appendJSONArray(b []byte, vals []any) []byte {
	b = append(b, '[')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONValue(b, v)
	}
	return append(b, ']')
}

// appendJSONObject appends {"col":value,…} for the value types bulkInsert
// takes.
func appendJSONObject(b []byte, cols []string, vals []any) []byte {
	b = append(b, '{')
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, c)
		b = append(b, ':')
		b = appendJSONValue(b, vals[i])
	}
	return append(b, '}')
}

// appendJSONValue appends one value of the types bulkInsert takes.
func appendJSONValue(b []byte, val any) []byte {
	switch v := val.(type) {
	case string:
		b = appendJSONString(b, v)
	case bool:
		b = strconv.AppendBool(b, v)
	case int:
		b = strconv.AppendInt(b, int64(v), 10)
	case int64:
		b = strconv.AppendInt(b, v, 10)
	default:
		panic(fmt.Sprintf("store: bulkInsert: unsupported value type %T", v))
	}
	return b
}

// appendJSONString appends s as a JSON string (UTF-8 passes through).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
