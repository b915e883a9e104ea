/**
 * The records the original's tests generate (its `tests/lib/faker.py`): schema-valid studies,
 * biosamples, sequencing runs, data objects and workflow executions with ids of the shoulder `00`
 * numbered per prefix (`nmdc:sty-00-000001`, ...), and the file staging and job records of its own
 * models. One Faker per test file: its numbers keep counting, so two tests never meet the same id
 * unless they name it.
 */
type Overrides = Record<string, unknown>;
export type Record_ = { id: string } & Record<string, unknown>;

/** An ENVO term as the generated biosamples carry it. */
function envTerm(rawValue: string, id: string, name: string) {
  return {
    has_raw_value: rawValue,
    term: { id, name, type: 'nmdc:OntologyClass' },
    type: 'nmdc:ControlledIdentifiedTermValue',
  };
}

/** The workflow execution classes the original's faker knows, by their id prefix. */
const WORKFLOW_PREFIXES: Record<string, string> = {
  'nmdc:MetagenomeAnnotation': 'nmdc:wfmgan-00-',
  'nmdc:MetagenomeAssembly': 'nmdc:wfmgas-00-',
  'nmdc:ReadQcAnalysis': 'nmdc:wfrqc-00-',
};

export class Faker {
  private readonly counts = new Map<string, number>();

  /** `prefix` followed by the next number of that prefix, six digits wide. */
  uniqueId(prefix: string): string {
    const n = (this.counts.get(prefix) ?? 0) + 1;
    this.counts.set(prefix, n);
    return `${prefix}${String(n).padStart(6, '0')}`;
  }

  private many<T>(quantity: number, make: (i: number) => T): T[] {
    return Array.from({ length: quantity }, (_, i) => make(i));
  }

  studies(quantity: number, overrides: Overrides = {}): Record_[] {
    return this.many(quantity, () => ({
      id: this.uniqueId('nmdc:sty-00-'),
      type: 'nmdc:Study',
      study_category: 'research_study',
      ...overrides,
    }));
  }

  biosamples(quantity: number, associatedStudies: string[], overrides: Overrides = {}): Record_[] {
    return this.many(quantity, () => ({
      id: this.uniqueId('nmdc:bsm-00-'),
      type: 'nmdc:Biosample',
      associated_studies: associatedStudies,
      env_broad_scale: envTerm('ENVO_00000446', 'ENVO:00000446', 'terrestrial biome'),
      env_local_scale: envTerm('ENVO_00005801', 'ENVO:00005801', 'rhizosphere'),
      env_medium: envTerm('ENVO_00001998', 'ENVO:00001998', 'soil'),
      ...overrides,
    }));
  }

  nucleotideSequencings(
    quantity: number,
    associatedStudies: string[],
    hasInput: string[],
    overrides: Overrides = {},
  ): Record_[] {
    return this.many(quantity, () => ({
      id: this.uniqueId('nmdc:dgns-00-'),
      type: 'nmdc:NucleotideSequencing',
      analyte_category: 'metagenome',
      associated_studies: associatedStudies,
      has_input: hasInput,
      ...overrides,
    }));
  }

  dataObjects(quantity: number, overrides: Overrides = {}): Record_[] {
    return this.many(quantity, () => ({
      id: this.uniqueId('nmdc:dobj-00-'),
      type: 'nmdc:DataObject',
      name: 'arbitrary_string',
      description: 'arbitrary_string',
      data_category: 'processed_data',
      data_object_type: 'Protein Report',
      ...overrides,
    }));
  }

  workflowExecutions(
    quantity: number,
    workflowType: string,
    wasInformedBy: string[],
    hasInput: string[],
    overrides: Overrides = {},
  ): Record_[] {
    const prefix = WORKFLOW_PREFIXES[workflowType];
    if (prefix === undefined) throw new Error(`Unsupported workflow type: '${workflowType}'`);
    return this.many(quantity, () => ({
      id: `${this.uniqueId(prefix)}.1`,
      type: workflowType,
      execution_resource: 'NERSC-Perlmutter',
      git_url: 'https://www.example.com',
      processing_institution: 'NMDC',
      started_at_time: '2000-01-01 12:00:00',
      was_informed_by: wasInformedBy,
      has_input: hasInput,
      ...overrides,
    }));
  }

  metagenomeAnnotations(
    quantity: number,
    wasInformedBy: string[],
    hasInput: string[],
    overrides: Overrides = {},
  ): Record_[] {
    return this.workflowExecutions(quantity, 'nmdc:MetagenomeAnnotation', wasInformedBy, hasInput, overrides);
  }

  globusTasks(quantity: number, overrides: Overrides = {}): Array<Record<string, unknown>> {
    return this.many(quantity, () => ({
      task_id: this.uniqueId('globus-task-'),
      task_status: 'SUCCEEDED',
      ...overrides,
    }));
  }

  jgiSamples(quantity: number, overrides: Overrides = {}): Array<Record<string, unknown>> {
    return this.many(quantity, () => ({
      jdp_file_id: this.uniqueId('jgi-sample-'),
      ap_gold_id: 'test_ap_gold_id',
      gold_study_id: 'test_study_id',
      its_ap_id: '12345',
      sequencing_project_name: 'test_project',
      gold_biosample_id: 'test_biosample_id',
      gold_seq_id: 'test_seq_id',
      file_name: 'test_file.fastq',
      globus_file_status: 'READY',
      jdp_file_status: 'RESTORED',
      jdp_file_size: 1000,
      analysis_project_id: 'test_analysis_project',
      jgi_ap_id: '54321',
      request_id: 1,
      // Python's naive `datetime.now().isoformat()`: no zone, microseconds.
      create_date: new Date().toISOString().replace('Z', '000'),
      ...overrides,
    }));
  }

  sequencingProjects(quantity: number, overrides: Overrides = {}): Array<Record<string, unknown>> {
    return this.many(quantity, (i) => ({
      sequencing_project_name: `arbitrary_string-${i + 1}`,
      sequencing_project_description: 'arbitrary_string',
      jgi_proposal_id: 'arbitrary_string',
      nmdc_study_id: 'arbitrary_string',
      ...overrides,
    }));
  }

  /** A job as the original's `Job` model dumps it (every field, unset ones null). */
  jobs(quantity: number, overrides: Overrides = {}): Array<Record<string, unknown>> {
    return this.many(quantity, () => ({
      id: this.uniqueId('job-'),
      name: 'arbitrary_string',
      description: null,
      created_at: null,
      config: {},
      claims: [],
      workflow: {
        id: 'arbitrary_string',
        name: null,
        description: null,
        capability_ids: null,
        created_at: null,
      },
      ...overrides,
    }));
  }
}
