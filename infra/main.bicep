// The whole system: storage, Event Hubs, Key Vault, monitoring, one user-assigned identity with least-privilege
// roles, and the Function App on Flex Consumption (or two apps from the same package: extractor and orchestration).
targetScope = 'resourceGroup'

@description('The azd environment name (AZURE_ENV_NAME, from main.parameters.json): every resource is tagged azd-env-name with it, and it is the default name prefix. Empty outside azd.')
@maxLength(64)
param environmentName string = ''
@description('Short lowercase prefix for resource names (default: the azd environment name, lowercased, at most 12 characters).')
@minLength(3)
@maxLength(12)
param namePrefix string = take(toLower(environmentName), 12)
param location string = resourceGroup().location
param tags object = {}
@description('Object id of the deploying user or principal (azd: AZURE_PRINCIPAL_ID), given data-plane roles to set the Key Vault secrets, send a test file, read results and debug locally against these resources. Empty: none.')
param principalId string = ''
@allowed(['User', 'ServicePrincipal', 'Group'])
param principalType string = 'User'

@description('single: one app runs every function; split: the extractor and the orchestration as two apps from the same package, each disabling the other role\'s functions.')
@allowed(['single', 'split'])
param deploymentMode string = 'single'
@allowed([512, 2048, 4096])
param instanceMemoryMB int = 4096
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 100
@allowed([512, 2048, 4096])
param extractorInstanceMemoryMB int = 4096
@description('Extractor worker processes per instance, and the memory limit of each: keep workers x memory a few hundred MB under the instance memory.')
@minValue(1)
param extractorWorkers int = 2
@minValue(128)
param extractorWorkerMemoryMB int = 1536
@description('Wall-clock limit of one extraction, in seconds.')
param extractorTimeoutS int = 60
@description('The extractor\'s container image (the Dockerfile) to run on Azure Container Apps as well (modules/containerapp.bicep); empty: none.')
param extractorContainerImage string = ''
@description('Registry server the image is pulled from with the app identity (e.g. myregistry.azurecr.io; grant the identity AcrPull); empty: a public image.')
param extractorContainerRegistry string = ''
@minValue(1)
@maxValue(30)
param extractorContainerMaxReplicas int = 10

@minValue(1)
@maxValue(32)
param acceptedPartitionCount int = 4
@minValue(1)
@maxValue(32)
param statusPartitionCount int = 4
@minValue(1)
@maxValue(7)
param eventRetentionDays int = 1

@description('Base URL of the client-application registration API (GET /v1/clientApplication/{id}).')
param registrationApiUrl string
@description('Entra scope for the registration API token (empty: the API needs no token).')
param registrationApiScope string = ''
@description('Base URL of the Palantir ingestion endpoint for DBRICKS results (empty: DBRICKS results are not ingested).')
param palantirIngestUrl string = ''
@description('Foundry dataset RID the DBRICKS results are uploaded to (required with palantirIngestUrl).')
param palantirDatasetRid string = ''
@description('Hosts DOCSAI result URLs may be downloaded from (comma-separated).')
param resultDownloadAllowedHosts string = ''
@description('Hosts a registration\'s extractor URLs may name (comma-separated host, host:port or *.domain; empty: none). SECURITY.md.')
param extractorAllowedHosts string = ''
@description('App settings a registration\'s auth.setting may name as its bearer token (comma-separated).')
param extractorTokenSettings string = 'DOCSAI_TOKEN,DBRICKS_TOKEN'
@description('Global polling defaults (an extractor\'s jobTrackingConfig wins per field).')
param maxPollingAttempts int = 60
param pollIntervalMs int = 10000
param maxDelayMs int = 120000
param maxPollDurationMs int = 7200000
@description('NCRONTAB schedule of the sweeper (lost poll messages, deadlines, unpublished events).')
param sweeperSchedule string = '0 */5 * * * *'

// azd finds its environment's resources by azd-env-name and the app `azd deploy api` publishes to by
// azd-service-name (azure.yaml); outside azd (environmentName empty) only the caller's tags are set.
var allTags = union(tags, empty(environmentName) ? {} : { 'azd-env-name': environmentName })
var apiTags = union(allTags, { 'azd-service-name': 'api' })

// Names the code expects (settings in shared/orchestration/settings.py; defaults match). The queue triggers bind
// %POLL_QUEUE% and %CANCEL_QUEUE%, so these app settings are what the triggers listen on and the handlers enqueue to
// (tests/test_infra.py checks every binding expression is set here with the declared default).
var acceptedContainerName = 'accepted-files'
var resultsContainerName = 'results'
var poisonContainerName = 'accepted-files-poison'
var pollQueueName = 'poll-jobs'
var cancelQueueName = 'cancel-jobs'
var statusLocalQueueName = 'job-status-local'
var jobsTableName = 'jobs'
var deploymentContainerName = 'app-package'
var acceptedHubName = 'accepted-files'
var acceptedConsumerGroupName = 'submit-fn'
var statusHubName = 'job-status'

module identity 'modules/identity.bicep' = {
  name: 'identity'
  params: { location: location, namePrefix: namePrefix, tags: allTags }
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  params: { location: location, namePrefix: namePrefix, tags: allTags }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  params: {
    location: location
    namePrefix: namePrefix
    tags: allTags
    acceptedContainerName: acceptedContainerName
    resultsContainerName: resultsContainerName
    poisonContainerName: poisonContainerName
    pollQueueName: pollQueueName
    cancelQueueName: cancelQueueName
    statusLocalQueueName: statusLocalQueueName
    jobsTableName: jobsTableName
    deploymentContainerName: deploymentContainerName
  }
}

module eventHubs 'modules/eventhubs.bicep' = {
  name: 'eventhubs'
  params: {
    location: location
    namePrefix: namePrefix
    tags: allTags
    acceptedHubName: acceptedHubName
    acceptedConsumerGroupName: acceptedConsumerGroupName
    statusHubName: statusHubName
    acceptedPartitionCount: acceptedPartitionCount
    statusPartitionCount: statusPartitionCount
    retentionDays: eventRetentionDays
  }
}

module keyVault 'modules/keyvault.bicep' = {
  name: 'keyvault'
  params: { location: location, namePrefix: namePrefix, tags: allTags }
}

module roles 'modules/roles.bicep' = {
  name: 'roles'
  params: {
    principalId: identity.outputs.principalId
    hostAccountName: storage.outputs.hostAccountName
    dataAccountName: storage.outputs.dataAccountName
    acceptedContainerName: acceptedContainerName
    resultsContainerName: resultsContainerName
    poisonContainerName: poisonContainerName
    pollQueueName: pollQueueName
    cancelQueueName: cancelQueueName
    statusLocalQueueName: statusLocalQueueName
    jobsTableName: jobsTableName
    eventHubNamespaceName: eventHubs.outputs.namespaceName
    acceptedHubName: acceptedHubName
    statusHubName: statusHubName
    keyVaultName: keyVault.outputs.name
    appInsightsName: monitoring.outputs.appInsightsName
  }
}

var kvUri = keyVault.outputs.uri
var clientId = identity.outputs.clientId

// Settings every app gets: the host's identity-based connections and monitoring.
var hostSettings = {
  AzureWebJobsStorage__credential: 'managedidentity'
  AzureWebJobsStorage__clientId: clientId
  AzureWebJobsStorage__blobServiceUri: storage.outputs.hostBlobEndpoint
  AzureWebJobsStorage__queueServiceUri: storage.outputs.hostQueueEndpoint
  AzureWebJobsStorage__tableServiceUri: storage.outputs.hostTableEndpoint
  APPLICATIONINSIGHTS_CONNECTION_STRING: monitoring.outputs.appInsightsConnectionString
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${clientId};Authorization=AAD'
  // host.json's telemetryMode OpenTelemetry: the Python worker configures the Azure Monitor distro and streams its
  // traces and logs itself (docs/orchestration.md, "Tracing").
  PYTHON_APPLICATIONINSIGHTS_ENABLE_TELEMETRY: 'true'
  AZURE_CLIENT_ID: clientId
}

// The extractor service (extract_fn/settings.py).
var extractorMaxBytes = '67108864'
var extractorMaxOutputBytes = '268435456'
var extractorSettings = {
  EXTRACTOR_TOKENS: '@Microsoft.KeyVault(SecretUri=${kvUri}secrets/extractor-tokens/)'
  EXTRACTOR_MAX_BYTES: extractorMaxBytes
  EXTRACTOR_TIMEOUT_S: string(extractorTimeoutS)
  EXTRACTOR_WORKERS: string(extractorWorkers)
  EXTRACTOR_MEMORY_LIMIT_MB: string(extractorWorkerMemoryMB)
  EXTRACTOR_MAX_OUTPUT_BYTES: extractorMaxOutputBytes
}

// The orchestration (shared/orchestration/settings.py, shared/loom/settings.py).
var orchestrationSettings = {
  EventHubConnection__fullyQualifiedNamespace: eventHubs.outputs.fullyQualifiedNamespace
  EventHubConnection__credential: 'managedidentity'
  EventHubConnection__clientId: clientId
  DataStorage__credential: 'managedidentity'
  DataStorage__clientId: clientId
  DataStorage__blobServiceUri: storage.outputs.dataBlobEndpoint
  DataStorage__queueServiceUri: storage.outputs.dataQueueEndpoint
  DataStorage__tableServiceUri: storage.outputs.dataTableEndpoint
  ACCEPTED_FILES_HUB: acceptedHubName
  ACCEPTED_FILES_CONSUMER_GROUP: acceptedConsumerGroupName
  SWEEPER_SCHEDULE: sweeperSchedule
  JOB_STATUS_HUB: statusHubName
  JOBS_TABLE: jobsTableName
  POLL_QUEUE: pollQueueName
  CANCEL_QUEUE: cancelQueueName
  RESULTS_CONTAINER: resultsContainerName
  ACCEPTED_FILES_POISON_CONTAINER: poisonContainerName
  REGISTRATION_API_URL: registrationApiUrl
  REGISTRATION_API_SCOPE: registrationApiScope
  RESULT_DOWNLOAD_ALLOWED_HOSTS: resultDownloadAllowedHosts
  // The outbound policy (SECURITY.md): where registrations may point, which settings are extractor tokens, whose
  // files a DOCSAI SAS may be minted for; an event's inline registration is not honoured.
  EXTRACTOR_ALLOWED_HOSTS: extractorAllowedHosts
  EXTRACTOR_TOKEN_SETTINGS: extractorTokenSettings
  ACCEPTED_FILES_CONTAINER: acceptedContainerName
  ALLOW_EVENT_REGISTRATION: 'false'
  FLUXX_EXTRACTOR_MAX_POLLING_ATTEMPTS: string(maxPollingAttempts)
  FLUXX_EXTRACTOR_POLL_INTERVAL_MS: string(pollIntervalMs)
  FLUXX_EXTRACTOR_MAX_DELAY_MS: string(maxDelayMs)
  FLUXX_EXTRACTOR_MAX_POLL_DURATION_MS: string(maxPollDurationMs)
  LOOM_DOCUMENT_EXTRACTOR_TOKEN: '@Microsoft.KeyVault(SecretUri=${kvUri}secrets/loom-extractor-token/)'
}

// Palantir ingestion only when configured: its token is a Key Vault secret the operator sets (palantir-token).
var palantirSettings = empty(palantirIngestUrl) ? {} : {
  PALANTIR_INGEST_URL: palantirIngestUrl
  PALANTIR_DATASET_RID: palantirDatasetRid
  PALANTIR_TOKEN: '@Microsoft.KeyVault(SecretUri=${kvUri}secrets/palantir-token/)'
}

// Function names as app.get_functions() reports them (tests/test_infra.py keeps these in step with the code).
// In split mode each app also runs only its own role (APP_ROLES), so the extractor app needs no orchestration
// setting and the orchestration app no extractor token.
var disableExtractor = {
  APP_ROLES: 'orchestration'
  'AzureWebJobs.http_app_func.Disabled': 'true'
}
var disableOrchestration = {
  APP_ROLES: 'extractor'
  'AzureWebJobs.submit_accepted_files.Disabled': 'true'
  'AzureWebJobs.poll_job.Disabled': 'true'
  'AzureWebJobs.sweep_jobs.Disabled': 'true'
  'AzureWebJobs.cancel_job_http.Disabled': 'true'
  'AzureWebJobs.cancel_job_queue.Disabled': 'true'
}

module singleApp 'modules/functionapp.bicep' = if (deploymentMode == 'single') {
  name: 'app'
  dependsOn: [roles]
  params: {
    location: location
    name: 'func-${namePrefix}-${uniqueString(resourceGroup().id, namePrefix)}'
    tags: apiTags
    identityId: identity.outputs.id
    identityClientId: clientId
    deploymentContainerUrl: storage.outputs.deploymentContainerUrl
    instanceMemoryMB: instanceMemoryMB
    maximumInstanceCount: maximumInstanceCount
    appSettings: union(hostSettings, extractorSettings, orchestrationSettings, palantirSettings, {
      // The orchestration's own extractor: this app's extract route.
      LOOM_DOCUMENT_EXTRACTOR_URL: 'https://func-${namePrefix}-${uniqueString(resourceGroup().id, namePrefix)}.azurewebsites.net'
    })
  }
}

module extractorApp 'modules/functionapp.bicep' = if (deploymentMode == 'split') {
  name: 'extractor-app'
  dependsOn: [roles]
  params: {
    location: location
    name: 'func-${namePrefix}-x-${uniqueString(resourceGroup().id, namePrefix)}'
    tags: apiTags
    identityId: identity.outputs.id
    identityClientId: clientId
    deploymentContainerUrl: storage.outputs.deploymentContainerUrl
    instanceMemoryMB: extractorInstanceMemoryMB
    maximumInstanceCount: maximumInstanceCount
    appSettings: union(hostSettings, extractorSettings, disableOrchestration)
  }
}

module orchestrationApp 'modules/functionapp.bicep' = if (deploymentMode == 'split') {
  name: 'orchestration-app'
  dependsOn: [roles]
  params: {
    location: location
    name: 'func-${namePrefix}-o-${uniqueString(resourceGroup().id, namePrefix)}'
    tags: allTags
    identityId: identity.outputs.id
    identityClientId: clientId
    deploymentContainerUrl: storage.outputs.deploymentContainerUrl
    instanceMemoryMB: instanceMemoryMB
    maximumInstanceCount: maximumInstanceCount
    appSettings: union(hostSettings, orchestrationSettings, palantirSettings, disableExtractor, {
      LOOM_DOCUMENT_EXTRACTOR_URL: 'https://func-${namePrefix}-x-${uniqueString(resourceGroup().id, namePrefix)}.azurewebsites.net'
    })
  }
}

// Optionally, the extractor as a container on Azure Container Apps: same identity, same Key Vault token, same limits.
module extractorContainer 'modules/containerapp.bicep' = if (!empty(extractorContainerImage)) {
  name: 'extractor-container'
  dependsOn: [roles]
  params: {
    location: location
    name: 'ca-${namePrefix}-x-${take(uniqueString(resourceGroup().id, namePrefix), 8)}'
    tags: allTags
    identityId: identity.outputs.id
    identityClientId: clientId
    image: extractorContainerImage
    registryServer: extractorContainerRegistry
    keyVaultUri: kvUri
    logAnalyticsWorkspaceName: monitoring.outputs.workspaceName
    workers: extractorWorkers
    workerMemoryMB: extractorWorkerMemoryMB
    timeoutS: extractorTimeoutS
    maxBytes: extractorMaxBytes
    maxOutputBytes: extractorMaxOutputBytes
    maxReplicas: extractorContainerMaxReplicas
  }
}

// The deploying user's data-plane roles (azd passes AZURE_PRINCIPAL_ID): set the secrets, send a test file, read
// results, debug locally against these resources.
module userRoles 'modules/user-roles.bicep' = if (!empty(principalId)) {
  name: 'user-roles'
  params: {
    principalId: principalId
    principalType: principalType
    dataAccountName: storage.outputs.dataAccountName
    eventHubNamespaceName: eventHubs.outputs.namespaceName
    keyVaultName: keyVault.outputs.name
  }
}

var apiAppName = deploymentMode == 'single' ? singleApp.outputs.name : extractorApp.outputs.name
var orchestrationAppName = deploymentMode == 'single' ? singleApp.outputs.name : orchestrationApp.outputs.name

// Outputs in azd's naming (azd writes each into the environment's .env, UPPER_SNAKE as here): azure.yaml's
// `orchestration` service deploys to AZURE_ORCHESTRATION_APP_NAME, the README's steps read the others. The
// identity's client id is not named AZURE_CLIENT_ID, which a local credential would take as its own.
output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = resourceGroup().name
output DEPLOYMENT_MODE string = deploymentMode
output AZURE_KEY_VAULT_NAME string = keyVault.outputs.name
output AZURE_STORAGE_ACCOUNT_NAME string = storage.outputs.dataAccountName
output AZURE_RESULTS_CONTAINER string = resultsContainerName
output AZURE_ACCEPTED_FILES_CONTAINER string = acceptedContainerName
output AZURE_EVENTHUB_NAMESPACE string = eventHubs.outputs.fullyQualifiedNamespace
output AZURE_ACCEPTED_FILES_HUB string = acceptedHubName
output AZURE_JOB_STATUS_HUB string = statusHubName
output AZURE_IDENTITY_CLIENT_ID string = clientId
output AZURE_FUNCTION_APP_NAME string = apiAppName
output AZURE_ORCHESTRATION_APP_NAME string = orchestrationAppName
output EXTRACTOR_URL string = 'https://${apiAppName}.azurewebsites.net'
output EXTRACTOR_CONTAINER_URL string = empty(extractorContainerImage) ? '' : extractorContainer.outputs.url
