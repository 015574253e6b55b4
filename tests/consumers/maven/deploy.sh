#!/usr/bin/env bash
# docs/installation.md's deploy:deploy-file loop, verbatim between the README markers. run.sh runs
# it from the repository's root with the URL of a file repository in place of Nexus's.
set -euo pipefail
# README: begin
V=0.1.0
for A in offsetkeeper_2.12 offsetkeeper_2.13; do
  D=build/repo/io/offsetkeeper/$A/$V
  mvn deploy:deploy-file -DrepositoryId=nexus \
    -Durl=https://nexus.example.com/repository/maven-releases/ \
    -Dfile=$D/$A-$V.jar -DpomFile=$D/$A-$V.pom \
    -Dsources=$D/$A-$V-sources.jar -Djavadoc=$D/$A-$V-javadoc.jar
done
# README: end
