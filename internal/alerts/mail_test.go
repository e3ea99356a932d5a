package alerts_test

import "github.com/lcmproject/lcm/internal/auth/mail"

func mailConfig(port int) mail.Config {
	return mail.Config{Host: "127.0.0.1", Port: port, From: "lcm@example.test", Username: "mailer", Password: "from-config-json", TLS: "starttls"}
}
