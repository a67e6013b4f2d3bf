/**
 * The console's build: `npm run build:console` (and `npm start`, when console/ changed) writes
 * dist/console/, which the API process serves at /console (src/http/routes/console-assets.ts).
 * Hashed file names under assets/, so they can be cached as immutable.
 */
import path from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: __dirname,
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: path.resolve(__dirname, '..', 'dist', 'console'),
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    // No inline <script> or module preload polyfill: the CSP allows scripts from 'self' only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
});
