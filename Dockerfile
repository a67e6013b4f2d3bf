# One image for both roles (see docker-compose.yml): `api` and `worker`.
# Stage 1 installs everything, compiles TypeScript to dist/ (npm run build), builds the console into
# dist/console (npm run build:console) and prebuilds the workflow bundle; stage 2 carries production
# dependencies and dist/ only, runs compiled JavaScript with node (no tsx, no TypeScript sources) as
# the unprivileged `node` user.
# Node 24 (the active LTS), the runtime the project is built, tested and benchmarked on (.ci/run).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY scripts ./scripts
COPY console ./console
RUN npm run build \
 && npm run build:console \
 && npx tsx scripts/bundle-workflows.ts dist/workflow-bundle.js \
 && npm prune --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js \
    DATA_DIR=/app/.data
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node package.json ./
# Committed workflow histories, for WORKER_VERIFY_HISTORIES (read next to dist/src)
COPY --chown=node:node histories ./dist/histories
RUN mkdir -p /app/.data && chown node:node /app/.data && chmod 0700 /app/.data
USER node
EXPOSE 8080 9464
HEALTHCHECK --interval=10s --timeout=3s --retries=5 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "--max-semi-space-size=8", "dist/src/main.js"]
CMD ["api"]
