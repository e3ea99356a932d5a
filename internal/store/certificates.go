package store

import (
	"context"
	"time"

	"gorm.io/gorm/clause"
)

// Certificate is a stored TLS certificate; KeyPEM is encrypted at rest.
type Certificate struct {
	Name    string
	CertPEM string
	KeyPEM  string
}

// GetCertificate returns a stored certificate, or a domain not-found error.
func (s *Store) GetCertificate(ctx context.Context, name string) (Certificate, error) {
	var r certificateRow
	if err := s.conn(ctx).Where("name = ?", name).First(&r).Error; err != nil {
		return Certificate{}, mapErr(err, "certificate "+name)
	}
	return Certificate{Name: r.Name, CertPEM: r.CertPEM, KeyPEM: r.KeyPEM}, nil
}

// CreateCertificate stores a certificate unless one with that name exists
// (several replicas may race on first start: the first one wins, and every
// replica then reads the winner's).
func (s *Store) CreateCertificate(ctx context.Context, c Certificate) error {
	return mapErr(s.conn(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&certificateRow{
		Name: c.Name, CertPEM: c.CertPEM, KeyPEM: c.KeyPEM, CreatedAt: time.Now().UTC(),
	}).Error, "certificate")
}
