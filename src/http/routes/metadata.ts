import express from 'express';
import type { AppDeps } from '../deps.ts';
import type { QueryPlanner } from '../../../search/planner.ts';

/** Metadata access: the compact find endpoints and the `/nmdcschema` endpoints. */
export function metadataRouter(_deps: AppDeps, _planner: QueryPlanner): express.Router {
  return express.Router();
}
