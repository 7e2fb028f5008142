# syntax=docker/dockerfile:1
# Build stage: dev dependencies and the TypeScript compiler.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY *.ts ./
COPY plugins ./plugins
COPY routes ./routes
COPY schemas ./schemas
COPY services ./services
RUN npx tsc -p tsconfig.build.json

# Runtime stage: production dependencies and the compiled output only, as a non-root user.
FROM node:20-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8000
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
RUN mkdir -p /app/workspace && chown -R node:node /app/workspace
USER node
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["serve"]
