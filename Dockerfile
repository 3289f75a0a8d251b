# One image for the harvesters and for scrapyd: the project, the pinned Python packages a crawl needs
# (requirements.txt; the tests' requirements-test.txt stays out) and the programs the document converters call. docker-compose.yml runs it both ways.
FROM python:3.11-slim-bookworm

# scripts/setup.sh's SYSTEM_PACKAGES less the development servers and tools (tests/test_compose.py checks).
ARG SYSTEM_PACKAGES="pkg-config gcc libmariadb-dev poppler-utils ghostscript antiword unrtf catdoc util-linux"
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${SYSTEM_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*

# Render = auto / always (combine.cfg) needs a browser: build with --build-arg RENDER=1 for the image with Debian's
# chromium (some 300 MB more). Without it, a crawl renders nothing and counts the pages it would have rendered
# (render/skipped/no_browser).
ARG RENDER=0
RUN if [ "$RENDER" = "1" ]; then apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium \
 && rm -rf /var/lib/apt/lists/*; fi

WORKDIR /app
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

COPY scrapy.cfg ./
COPY combine_scrapy ./combine_scrapy
COPY topics ./topics

# scrapyd listens on every interface of the container (docker-compose.yml publishes it on 127.0.0.1 only,
# with HTTP basic auth from SCRAPYD_USERNAME and SCRAPYD_PASSWORD); eggs, logs and queues go to one volume.
RUN mkdir -p /etc/scrapyd /var/lib/scrapyd \
 && printf '%s\n' '[scrapyd]' 'bind_address = 0.0.0.0' 'http_port = 6800' \
      'eggs_dir = /var/lib/scrapyd/eggs' 'logs_dir = /var/lib/scrapyd/logs' 'dbs_dir = /var/lib/scrapyd/dbs' \
      'items_dir =' > /etc/scrapyd/scrapyd.conf
EXPOSE 6800

# Harvesters and scrapyd run as an unprivileged user that owns only what they write (new named
# volumes mounted on these directories take their owner from the image).
RUN useradd --system --home-dir /app --no-create-home crawler \
 && mkdir -p /data /app/data \
 && chown crawler:crawler /data /app/data /var/lib/scrapyd
USER crawler

CMD ["scrapy", "crawl", "focused", "-a", "job=glass"]
