package secret

import "context"

type ctxKey struct{}

// WithKeyring returns a context carrying the keyring; the store attaches it
// to every query so the GORM serializer can encrypt and decrypt fields.
func WithKeyring(ctx context.Context, k *Keyring) context.Context {
	return context.WithValue(ctx, ctxKey{}, k)
}

// FromContext returns the keyring attached by WithKeyring.
func FromContext(ctx context.Context) (*Keyring, bool) {
	k, ok := ctx.Value(ctxKey{}).(*Keyring)
	return k, ok && k != nil
}
