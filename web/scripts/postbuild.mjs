// vite's emptyOutDir removes web/dist/.gitkeep, which keeps the directory
// (and so web/embed.go's go:embed pattern) valid in a fresh checkout.
import { writeFileSync } from 'node:fs';
writeFileSync(new URL('../dist/.gitkeep', import.meta.url), '');
