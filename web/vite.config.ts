import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// The dev server proxies the REST API to a locally running lcm-api
// (self-signed certificate, hence secure: false). `npm run build` writes
// web/dist, which `make build` embeds into bin/lcm-api.
const target = process.env.LCM_DEV_API ?? 'https://127.0.0.1:9310';

export default defineConfig({
  plugins: [svelte()],
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    // The CSP forbids inline scripts; the polyfill is not needed by
    // the browsers we support and would add code to the entry chunk.
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
  server: {
    proxy: {
      '/api': { target, secure: false, changeOrigin: false },
      '/v1': { target, secure: false, changeOrigin: false },
    },
  },
});
